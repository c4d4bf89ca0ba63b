"""`collbench history switch NAME`: every slow switch link the verdicts named with NAME at one end (or the
link itself, 's1-s2' or 's1 uplink'), across the runs recorded: its rail, the hosts behind it, its figures."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sqlalchemy import or_, select

from jobs.history import schema
from jobs.history.database import History
from jobs.history.queries import Row


@dataclass(frozen=True, slots=True)
class SwitchEvent:
    """One verdict that named a slow switch link: its run, the link ('s1-s2', 's1 uplink'), its rail (None:
    every rail), its figures and the hosts on each side (none of them drained for it)."""

    run_id: str
    started: float
    link: str
    rail: int | None
    busbw: float
    """The median busbw of the slow pairs across it (GB/s)."""
    ratio: float
    """busbw / the run's healthy level."""
    slow: int
    measurements: int
    side_a: str
    side_b: str

    def to_plain(self) -> Row:
        return asdict(self)


def switch_record(history: History, name: str) -> list[SwitchEvent]:
    """Every slow link the verdicts named between `name` and another switch, or above it (its uplink), or the
    link `name` itself ('s1-s2', 's1 uplink'), oldest first; on several rails of one run, one event a rail."""
    t = schema.isolate_switches.c
    query = select(schema.runs.c.run_id, schema.runs.c.started, schema.isolate_switches).join(schema.isolate_switches)
    query = query.where(t.switches != "", or_(t.switch_a == name, t.switch_b == name, t.switches == name))
    with history.engine.connect() as connection:
        found = connection.execute(query).mappings().all()
    names = ("run_id", "started", "switches", "rail", "busbw", "ratio", "slow", "measurements", "side_a", "side_b")
    events = [SwitchEvent(*(r[name] for name in names)) for r in found]
    return sorted(events, key=lambda e: (e.started, e.run_id, e.link, -1 if e.rail is None else e.rail))
