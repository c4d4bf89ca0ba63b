"""An isolate verdict as the text a user reads: the header, the matrix or bisect's path, the node x rail
table, and the findings with what to exclude and drain."""

from __future__ import annotations

from jobs.inspect.grain_lines import grain_findings, rail_table, topology_lines
from jobs.inspect.isolate_verdict import IsolateOutcome
from jobs.isolate.bisect import Bisect
from jobs.isolate.naming import unconfirmed_line
from jobs.isolate.plan import Group
from jobs.isolate.rounds import Rounds
from jobs.isolate.verdict import EVERY_RAIL, Verdict
from slurm.hostlist import readable_hostlist

MATRIX_MAX_NODES = 16
"""Up to this many nodes the text verdict prints the whole node x node matrix; beyond, the slowest nodes
and pairs (the whole matrix is always in isolate.json and isolate-matrix.csv)."""
WORST_SHOWN = 20


def lines(iso: IsolateOutcome, op: str, sizes: list[int]) -> list[str]:
    rounds = iso.rounds
    took = f", {sum(iso.seconds):.1f} s of rounds" if iso.seconds else ""
    finished = rounds.round_no - 1 if rounds.unfinished else rounds.round_no
    if any(m.round == rounds.round_no for m in rounds.measured) and rounds.unfinished:
        took = f" (round {rounds.round_no} in part){took}"
    out = [
        f"# collbench isolate {iso.run_id}: mode {rounds.mode}, {len(iso.hosts)} nodes, "
        f"{finished} round(s) measured{took}",
        f"# each group runs {op} at {', '.join(map(_size, sizes))}; its figure is the best busbw (GB/s)",
    ]
    verdict = iso.verdict
    if verdict is None:
        out.append("# no round finished: nothing to judge")
    else:
        origin = _origin(iso)
        out.append(
            f"# healthy level {verdict.level:.3f} GB/s ({origin}), spread (MAD) {verdict.spread:.3f}; slow below "
            f"{verdict.level * (1 - verdict.tolerance):.3f} (tolerance {verdict.tolerance:.0%})"
        )
        out += topology_lines(iso.grains, iso.hosts)
        out += [""] + (_bisect_lines(iso) if isinstance(rounds.planner, Bisect) else _matrix_lines(iso, verdict))
        out += rail_table(verdict, iso.grains, iso.hosts)
    if rounds.unfinished:
        names = ", ".join(readable_hostlist(iso.hosts[n] for n in g) for g in rounds.unfinished)
        out.append(f"# round {rounds.round_no} did not finish: {names}")
    out.append("")
    out += _findings(iso)
    return out


def _origin(iso: IsolateOutcome) -> str:
    """Where the healthy level came from: the config, the results history, or the run itself (and why)."""
    rounds = iso.rounds
    settings = rounds.settings
    if settings.expected_busbw:
        return settings.expected_from or "isolate.expected_busbw"
    own = _level_origin(rounds, bool(iso.grains.leaves))
    return f"{own}; {settings.expected_from}" if settings.expected_from else own


def _level_origin(rounds: Rounds, leaves: bool) -> str:
    if isinstance(rounds.planner, Bisect):
        return "the best figure so far"
    each = "each (node, rail)" if rounds.rails != [EVERY_RAIL] else "each node"
    return f"median of {each}'s median" + (", pairs within a leaf" if leaves else "")


def _size(size: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return f"{size}"


def _matrix_lines(iso: IsolateOutcome, verdict: Verdict) -> list[str]:
    hosts = iso.hosts
    width = max(8, *(len(h) + 1 for h in hosts))
    out = []
    if len(hosts) <= MATRIX_MAX_NODES:
        slowest = ", each pair's slowest rail" if iso.grains.on_rails else ""
        out.append(f"# busbw (GB/s), node x node{slowest}")
        out.append("#" + " " * (width - 1) + "".join(f"{h:>{width}}" for h in hosts))
        for i, host in enumerate(hosts):
            cells = [_cell(verdict.matrix.get((min(i, j), max(i, j))), i == j, width) for j in range(len(hosts))]
            out.append(f"#{host:>{width - 1}}" + "".join(cells))
        out.append("#")
    shown = sorted(verdict.nodes, key=lambda f: f.ratio)
    if len(hosts) > MATRIX_MAX_NODES:
        shown = shown[:WORST_SHOWN]
        pairs = sorted(verdict.matrix.items(), key=lambda item: item[1])[:WORST_SHOWN]
        out.append(f"# the {len(pairs)} slowest pairs of {len(verdict.matrix)} (all of them: isolate-matrix.csv)")
        out += [f"#   {hosts[a]}-{hosts[b]}  {busbw:.3f} GB/s  {busbw / verdict.level:.2f}" for (a, b), busbw in pairs]
        out.append(f"# the {len(shown)} slowest nodes of {len(hosts)}")
    out.append(f"#   {'node':<{width}} measured  slow  median busbw  of level")
    out += [
        f"#   {hosts[f.node]:<{width}} {f.measurements:>8}  {f.slow:>4}  {f.median_busbw:>12.3f}  {f.ratio:>8.2f}"
        for f in (shown if len(hosts) > MATRIX_MAX_NODES else sorted(verdict.nodes, key=lambda f: f.node))
    ]
    return out


def _cell(busbw: float | None, diagonal: bool, width: int) -> str:
    text = "-" if diagonal else "" if busbw is None else f"{busbw:.3f}"
    return f"{text:>{width}}"


def _bisect_lines(iso: IsolateOutcome) -> list[str]:
    """Bisect measures groups of every size: its path, round by round, says more than a sparse matrix."""
    by_round: dict[int, list[tuple[Group, float]]] = {}
    for m in iso.rounds.measured:
        by_round.setdefault(m.round, []).append((m.nodes, m.busbw))
    assert iso.verdict is not None
    threshold = iso.verdict.level * (1 - iso.verdict.tolerance)
    out = []
    for number, groups in sorted(by_round.items()):
        parts = [
            f"{readable_hostlist(iso.hosts[n] for n in g)} {busbw:.3f}{' SHORT' if busbw < threshold else ''}"
            for g, busbw in groups
        ]
        out.append(f"# round {number}: " + "; ".join(parts))
    return out


def _findings(iso: IsolateOutcome) -> list[str]:
    hosts, verdict = iso.hosts, iso.verdict
    out = []
    for node in iso.stopped:
        out.append(f"BAD NODE {node.host}: stopped answering during the test ({node.how})")
    if verdict is not None:
        for f in verdict.bad_nodes:
            out.append(
                f"BAD NODE {hosts[f.node]}: median busbw {f.median_busbw:.3f} GB/s, {f.ratio:.2f} of the level, "
                f"{f.slow} of {f.measurements} measurement(s) slow"
            )
        for link in verdict.bad_links:
            a, b = (hosts[n] for n in link.nodes)
            out.append(
                f"BAD LINK {a}-{b}: busbw {link.busbw:.3f} GB/s, {link.ratio:.2f} of the level, while {a} and {b} "
                "are healthy with the other nodes"
            )
        out += grain_findings(verdict, iso.grains, hosts)
        out += [unconfirmed_line(u, hosts, iso.grains.nics) for u in verdict.unconfirmed]
        out += iso.inconclusive_lines()
        out += [f"# note: {note}" for note in verdict.notes]
    if iso.exclude():
        out.append(f"# exclude {excluded_words(iso)} from the next job: {iso.exclude()}")
        out.append("# drain them (collbench isolate --apply runs these, and leaves a node someone else drained):")
        out += iso.drain().splitlines()
    if verdict is not None and verdict.inconclusive:
        out.append("# an INCONCLUSIVE unit is neither bad nor healthy: nothing is drained or excluded for it")
    if verdict is not None and verdict.bad_links:
        out.append("# a bad link: look at the cables, ports and switch ports between its two nodes")
    if not iso.found and verdict is not None and not iso.problems:
        if verdict.inconclusive:
            out.append(
                f"# nothing confirmed: {len(verdict.inconclusive)} unit(s) inconclusive (above); exit {iso.exit_code}"
            )
        elif verdict.unconfirmed:
            out.append(f"# nothing confirmed: {len(verdict.unconfirmed)} link(s) slow once and unconfirmed (above)")
        else:
            out.append(
                f"# nothing found: every node and link measured is within {verdict.tolerance:.0%} of the healthy level"
            )
    return out


def excluded_words(iso: IsolateOutcome) -> str:
    """What the exclude leaves out, by grain: 'the bad nodes', 'the nodes with a bad rail', 'the nodes that
    stopped answering' (a bad rail is not a bad node; a slow link excludes none)."""
    verdict = iso.verdict
    said = [
        words
        for words, any_of in (
            ("the bad nodes", verdict is not None and verdict.bad_nodes),
            ("the nodes with a bad rail", verdict is not None and verdict.bad_rails),
            ("the nodes that stopped answering", iso.stopped),
        )
        if any_of
    ]
    return " and ".join(said)
