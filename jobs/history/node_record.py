"""`collbench history node HOST`: every verdict that named a host, across the runs recorded."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Select, or_, select

from jobs.history import schema
from jobs.history.database import History
from jobs.history.queries import Row


@dataclass(frozen=True, slots=True)
class NodeEvent:
    """One verdict that named a host: its run, what kind (isolate node, isolate link, fabric, failure, slow
    host) and the verdict's words."""

    run_id: str
    started: float
    what: str
    detail: str

    def to_plain(self) -> Row:
        return asdict(self)


def node_record(history: History, host: str) -> list[NodeEvent]:
    """Every verdict that named `host`, oldest first: isolate (bad node, bad link), fabric, ranks blamed for a
    failure, slow at its own work: what the run's own verdict said, nothing it held is no evidence."""
    events = _isolate_nodes(history, host) + _isolate_links(history, host) + _fabric(history, host)
    events += _failures(history, host) + _slow(history, host)
    return sorted(events, key=lambda e: (e.started, e.run_id, e.what))


def _with_run(*columns: Any) -> Select[Any]:
    return select(schema.runs.c.run_id, schema.runs.c.started, *columns)


def _rows(history: History, query: Select[Any], what: str, detail: str) -> list[NodeEvent]:
    with history.engine.connect() as connection:
        found = connection.execute(query).mappings().all()
    return [NodeEvent(r["run_id"], r["started"], what, detail.format(**r)) for r in found]


def _isolate_nodes(history: History, host: str) -> list[NodeEvent]:
    t = schema.isolate_nodes.c
    query = _with_run(t.ratio, t.median_busbw, t.slow, t.measurements).join(schema.isolate_nodes)
    query = query.where(t.host == host, t.bad.is_(True))
    detail = (
        "isolate: bad node, median busbw {median_busbw:.2f} GB/s ({ratio:.2f} of the level), {slow}/{measurements} slow"
    )
    return _rows(history, query, "isolate node", detail)


def _isolate_links(history: History, host: str) -> list[NodeEvent]:
    t = schema.isolate_links.c
    query = _with_run(t.host_a, t.host_b, t.busbw, t.ratio).join(schema.isolate_links)
    query = query.where(or_(t.host_a == host, t.host_b == host))
    detail = "isolate: bad link {host_a}-{host_b}, busbw {busbw:.2f} GB/s ({ratio:.2f} of the level)"
    return _rows(history, query, "isolate link", detail)


def _fabric(history: History, host: str) -> list[NodeEvent]:
    t = schema.fabric.c
    query = _with_run(t.kind, t.line).join(schema.fabric).where(t.host == host)
    return _rows(history, query, "fabric", "fabric {kind}: {line}")


def _failures(history: History, host: str) -> list[NodeEvent]:
    """Runs whose verdict blamed ranks of `host`: not those where its ranks were only stopped by srun's
    clean-up, or noticed a peer lost, after another node's failure."""
    t = schema.hosts.c
    query = _with_run(t.blamed_ranks, t.ranks).join(schema.hosts).where(t.host == host, t.blamed_ranks > 0)
    return _rows(history, query, "failure", "{blamed_ranks} of its {ranks} rank(s) named the cause of the failure")


def _slow(history: History, host: str) -> list[NodeEvent]:
    """Runs whose report named `host` slow at its own work (never for where its timers came last)."""
    t = schema.hosts.c
    query = _with_run(t.slow).join(schema.hosts).where(t.host == host, t.slow != "")
    return _rows(history, query, "slow host", "{slow}")
