"""`collbench history node HOST`: every verdict that named a host, across the runs recorded, at the grain the
verdict named it: the node, one rail of it (its NIC), a link to another node, or a switch link it is behind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Select, func, or_, select

from jobs.history import schema
from jobs.history.database import History
from jobs.history.node_actions import actions_of
from jobs.history.queries import Row
from slurm.hostlist import BadHostlist, expand_hostlist


@dataclass(frozen=True, slots=True)
class NodeEvent:
    """One verdict that named a host: its run, what kind (isolate node, isolate rail, isolate link, behind
    switch link, fabric, failure, slow host, wrong elements), the verdict's words, and the rail it is of (None:
    the node over all its rails, or a verdict with no rail)."""

    run_id: str
    started: float
    what: str
    detail: str
    rail: int | None = None

    def to_plain(self) -> Row:
        return asdict(self)


def node_record(history: History, host: str) -> list[NodeEvent]:
    """Every verdict that named `host` (verdict_events), and what collbench did to it after one (drained,
    resumed, left, a drain refused), oldest first."""
    return _in_order(verdict_events(history, host) + _actions(history, host))


def verdict_events(history: History, host: str) -> list[NodeEvent]:
    """Every verdict that named `host`, oldest first: isolate (bad node, bad rail, bad link, behind a slow
    switch link), fabric, ranks blamed for a failure with its cause, slow at its own work, wrong elements on its
    ranks: what the run's own verdict said, nothing it held is no evidence."""
    events = _isolate_nodes(history, host) + _isolate_rails(history, host) + _isolate_links(history, host)
    events += _behind_switches(history, host) + _fabric(history, host) + _failures(history, host) + _slow(history, host)
    return _in_order(events + _wrong(history, host))


def _in_order(events: list[NodeEvent]) -> list[NodeEvent]:
    return sorted(events, key=lambda e: (e.started, e.run_id, e.what, -1 if e.rail is None else e.rail))


def _with_run(*columns: Any) -> Select[Any]:
    return select(schema.runs.c.run_id, schema.runs.c.started, *columns)


def _events(
    history: History,
    query: Select[Any],
    what: str,
    words: Callable[[Any], str],
    keep: Callable[[Any], bool] | None = None,
) -> list[NodeEvent]:
    """One event per row of `query` that `keep` keeps, its detail `words(row)`, its rail the row's (if any)."""
    with history.engine.connect() as connection:
        found = connection.execute(query).mappings().all()
    return [
        NodeEvent(r["run_id"], r["started"], what, words(r), r.get("rail")) for r in found if keep is None or keep(r)
    ]


def _rows(history: History, query: Select[Any], what: str, detail: str) -> list[NodeEvent]:
    return _events(history, query, what, lambda r: detail.format(**r))


def rail_words(rail: int | None, nic: str = "") -> str:
    """'rail 3 (mlx5_3)', 'rail 3', or 'every rail' (rail None), as the verdicts name a rail."""
    if rail is None:
        return "every rail"
    return f"rail {rail} ({nic})" if nic else f"rail {rail}"


def _isolate_nodes(history: History, host: str) -> list[NodeEvent]:
    t = schema.isolate_nodes.c
    query = _with_run(t.ratio, t.median_busbw, t.slow, t.measurements).join(schema.isolate_nodes)
    query = query.where(t.host == host, t.bad.is_(True), t.rail.is_(None))
    detail = (
        "isolate: bad node, median busbw {median_busbw:.2f} GB/s ({ratio:.2f} of the level), {slow}/{measurements} slow"
    )
    return _rows(history, query, "isolate node", detail)


def _isolate_rails(history: History, host: str) -> list[NodeEvent]:
    """One rail of the node slow while its other rails were healthy: that NIC, its cable or its switch port."""
    t = schema.isolate_nodes.c
    query = _with_run(t.rail, t.nic, t.ratio, t.median_busbw, t.slow, t.measurements).join(schema.isolate_nodes)
    query = query.where(t.host == host, t.bad.is_(True), t.rail.is_not(None))
    return _events(history, query, "isolate rail", _rail_words)


def _rail_words(r: Any) -> str:
    return (
        f"isolate {rail_words(r['rail'], r['nic'])}: bad rail, median busbw {r['median_busbw']:.2f} GB/s "
        f"({r['ratio']:.2f} of the level), {r['slow']}/{r['measurements']} slow; its other rails healthy"
    )


def _isolate_links(history: History, host: str) -> list[NodeEvent]:
    t = schema.isolate_links.c
    query = _with_run(t.host_a, t.host_b, t.busbw, t.ratio, t.rail).join(schema.isolate_links)
    query = query.where(or_(t.host_a == host, t.host_b == host))
    return _events(history, query, "isolate link", _link_words)


def _link_words(r: Any) -> str:
    on = "" if r["rail"] is None else f" on {rail_words(r['rail'])}"
    figures = f"busbw {r['busbw']:.2f} GB/s ({r['ratio']:.2f} of the level)"
    return f"isolate: bad link {r['host_a']}-{r['host_b']}{on}, {figures}"


def _behind_switches(history: History, host: str) -> list[NodeEvent]:
    """Runs whose verdict named a slow switch link (or a cut) with `host` on one side: the link's, not the
    node's fault (the verdict drained none of the nodes behind it). The sides are hostlists: the few switch
    verdicts are read and expanded here."""
    t = schema.isolate_switches.c
    query = _with_run(t.switches, t.rail, t.side_a, t.side_b, t.busbw, t.ratio).join(schema.isolate_switches)

    def behind(r: Any) -> bool:
        return host in _hosts_of(r["side_a"]) or host in _hosts_of(r["side_b"])

    return _events(history, query, "behind switch link", _behind_words, behind)


def _behind_words(r: Any) -> str:
    figures = f"busbw {r['busbw']:.2f} GB/s ({r['ratio']:.2f} of the level)"
    where = rail_words(r["rail"])
    if r["switches"]:
        link = f"behind slow switch link {r['switches']} on {where}"
    else:
        link = f"on one side of a cut {r['side_a']} | {r['side_b']} on {where} (no topology known)"
    return f"isolate: {link}, {figures}; not a fault of the node"


def _hosts_of(hostlist: str) -> set[str]:
    try:
        return set(expand_hostlist(hostlist)) if hostlist else set()
    except BadHostlist:
        return set()


def _fabric(history: History, host: str) -> list[NodeEvent]:
    t = schema.fabric.c
    query = _with_run(t.kind, t.line).join(schema.fabric).where(t.host == host)
    return _rows(history, query, "fabric", "fabric {kind}: {line}")


def _failures(history: History, host: str) -> list[NodeEvent]:
    """Runs whose verdict blamed ranks of `host`, with the cause in words (a failed `check --node` its FAIL
    line): not those where its ranks were only stopped by srun's clean-up, or noticed a peer lost, after another
    node's failure. A row recorded before the cause was kept says how many of its ranks the verdict blamed."""
    t = schema.hosts.c
    query = _with_run(t.blamed_ranks, t.ranks, t.cause).join(schema.hosts).where(t.host == host, t.blamed_ranks > 0)
    return _events(history, query, "failure", _failure_words)


def _failure_words(r: Any) -> str:
    return str(r["cause"]) or f"{r['blamed_ranks']} of its {r['ranks']} rank(s) named the cause of the failure"


def _wrong(history: History, host: str) -> list[NodeEvent]:
    """Runs with wrong elements in the output of `host`'s ranks: '38 wrong element(s) on rank(s) 1 in all_reduce
    at 3 size(s), 1024 B to 4096 B' (the ops and sizes are the run's rows with wrong elements)."""
    t, r = schema.hosts.c, schema.results.c
    query = _with_run(t.wrong, t.wrong_ranks, r.op, func.min(r.size), func.max(r.size), func.count(r.size.distinct()))
    query = query.join(schema.hosts).join(schema.results, r.run == t.run)
    query = query.where(t.host == host, t.wrong > 0, r.wrong > 0)
    query = query.group_by(schema.runs.c.run_id, schema.runs.c.started, t.wrong, t.wrong_ranks, r.op)
    with history.engine.connect() as connection:
        found = connection.execute(query).all()
    rows: dict[tuple[str, float, int, str], list[str]] = {}
    for run_id, started, wrong, ranks, op, smallest, largest, sizes in sorted(found, key=lambda f: (f[0], f[4])):
        where = f"{smallest} B" if sizes == 1 else f"{sizes} size(s), {smallest} B to {largest} B"
        rows.setdefault((run_id, started, wrong, ranks), []).append(f"{op} at {where}")
    return [
        NodeEvent(run_id, started, "wrong elements", f"{wrong} wrong element(s) on rank(s) {ranks} in {'; '.join(ops)}")
        for (run_id, started, wrong, ranks), ops in rows.items()
    ]


def _slow(history: History, host: str) -> list[NodeEvent]:
    """Runs whose report named `host` slow at its own work (never for where its timers came last)."""
    t = schema.hosts.c
    query = _with_run(t.slow).join(schema.hosts).where(t.host == host, t.slow != "")
    return _rows(history, query, "slow host", "{slow}")


ACTION_WORDS = {"drain": "drained", "resume": "resumed", "leave": "left"}


def _actions(history: History, host: str) -> list[NodeEvent]:
    """What collbench did to the node after a verdict: drained (its reason), resumed (why), refused (Slurm's
    words), left (someone else's drain, a reason still open)."""
    events = []
    for row in actions_of(history, host):
        what = ACTION_WORDS.get(str(row["action"]), str(row["action"]))
        if row["error"]:
            what, detail = f"{row['action']} refused", f"Slurm said: {row['error']}; {row['why']}"
        else:
            detail = str(row["reason"] if row["action"] == "drain" else row["why"])
        events.append(NodeEvent(str(row["run_id"]), float(row["at"]), f"{what} by {row['task']}", detail))
    return events
