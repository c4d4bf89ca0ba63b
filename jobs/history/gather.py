"""What the history keeps of one run, gathered from its run directory through the records and the
readers of jobs.inspect. Nothing is written into the run directory: a run that has not recorded its
final files is assessed in memory, as `report` does."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from collectives.results import SummaryRow, iter_rank_results
from jobs.config.fingerprint import config_fingerprint, injected_faults
from jobs.config.model import Config
from jobs.config.tasks import TASKS
from jobs.history.health import why_excluded
from jobs.inspect.isolate_verdict import assess_isolate, verdict_record
from jobs.inspect.postmortem import CAUSES, RankEnd, rank_spans
from jobs.inspect.report import OutcomeOnce, RunOutcome
from jobs.isolate.naming import switches_name
from jobs.isolate.reasons import CODES, drains
from jobs.rundir.attempts import read_attempts
from jobs.rundir.layout import RunDir, read_json
from jobs.rundir.records.config import load_run_config
from jobs.rundir.records.isolate import ISOLATE_VERDICT, IsolateVerdict, SwitchVerdict
from jobs.rundir.records.rank import RankState, RankStatus
from jobs.rundir.records.run import LauncherName, RunMeta
from jobs.rundir.records.summary import SUMMARY, Summary
from slurm.hostlist import BadHostlist, can_be_listed, collect_hostlist, expand_hostlist

Row = dict[str, Any]


class NotEnded(Exception):
    """The run has not ended: nothing to record yet."""


@dataclass(slots=True)
class RunRecord:
    """One run as the history keeps it: its `runs` row and the rows of every table that hangs off it."""

    run: Row
    children: dict[str, list[Row]] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return str(self.run["run_id"])


def gather(run: RunDir, sweep_id: str | None = None, outcome_of: Callable[[], RunOutcome] | None = None) -> RunRecord:
    """The run's record; NotEnded while it runs. `outcome_of`: the run's outcome with its per-rank view,
    where the caller has read it (a run's end); else the run is read here, once."""
    outcome_of = outcome_of or OutcomeOnce(run)
    meta = run.read_meta()
    cfg = load_run_config(run)
    summary = _summary(run, outcome_of)
    outcome = outcome_of()  # the hosts' verdicts need it whatever summary.json holds; its statuses serve too
    statuses = outcome.statuses
    env = rank0_env(run)
    attempts = read_attempts(run)
    record = RunRecord(run=_identity(run, meta, cfg, summary, statuses, env, sweep_id, len(attempts)))
    wrong = {} if meta.launcher is LauncherName.IMPORTED else wrong_by_rank(run, summary.rows)
    record.children = {
        "problems": [{"seq": i, "line": line} for i, line in enumerate(summary.problems)],
        "results": [_result(row) for row in summary.rows],
        "hosts": _hosts(statuses, summary, outcome, wrong),
        "fabric": _fabric(summary.fabric or {}, {s.host for s in statuses.values()}),
        "attempts": [
            {"number": a.number, "nodes": a.nodes, "started": a.started, "previous_ended": a.previous_ended}
            for a in attempts
        ],
    }
    if TASKS[meta.task].in_rounds:
        verdict = _isolate_verdict(run, outcome_of)
        record.children.update(_isolate(verdict))
        if summary.passed and verdict.inconclusive and not verdict.found:
            record.run["outcome"] = INCONCLUSIVE  # nothing confirmed, something the evidence could not settle
    record.run["digest"] = results_digest(record.run, summary.rows) if statuses else ""
    faults = injected_faults(cfg.faults)
    record.run["excluded"] = why_excluded(faults, summary.passed, summary.problems, record.children)
    return record


def _summary(run: RunDir, outcome_of: Callable[[], RunOutcome]) -> Summary:
    if run.summary_file.exists():
        return SUMMARY.read(run.summary_file)
    outcome = outcome_of()
    if not outcome.ended:
        raise NotEnded(f"{run.path}: the run has not ended")
    fabric = outcome.fabric.to_json() if outcome.fabric else None
    return Summary(
        run_id=run.run_id, passed=outcome.passed, problems=outcome.problems, rows=outcome.rows, fabric=fabric
    )


def rank0_env(run: RunDir) -> dict[str, Any]:
    """Rank 0's environment file, or nothing."""
    try:
        return read_json(run.rank_env(0))
    except (OSError, ValueError):
        return {}


def _identity(
    run: RunDir,
    meta: RunMeta,
    cfg: Config,
    summary: Summary,
    statuses: dict[int, RankStatus],
    env: dict[str, Any],
    sweep_id: str | None,
    attempts: int,
) -> Row:
    hosts = sorted({s.host for s in statuses.values()})
    return {
        "run_id": meta.run_id or run.run_id,
        "sweep_id": sweep_id,
        "job_id": meta.job_id,
        "attempt": max(attempts - 1, 0),
        "task": str(meta.task),
        "launcher": str(meta.launcher),
        "started": started_of(run, statuses),
        "ended": _ended(run, statuses),
        "user": _owner(run.path),
        "cluster": cluster_of(cfg, env),
        "config": config_fingerprint(cfg),
        "nodes": meta.nodes,
        "hostlist": _listed(hosts),
        "world_size": meta.world_size,
        **_platform(meta, cfg, env),
        "collbench_version": _version(),
        "outcome": "passed" if summary.passed else "failed",
        "recorded": time.time(),
    }


def _platform(meta: RunMeta, cfg: Config, env: dict[str, Any]) -> Row:
    """backend, device and the torch, NCCL and CUDA versions: for an imported run what its files say
    (`imported_as`, "unknown" where they do not say), else the config's and rank 0's environment's."""
    if meta.imported_as is not None:
        said = meta.imported_as
        return {
            "backend": said.backend, "device": said.device, "torch_version": said.torch_version,
            "nccl_version": said.nccl_version, "cuda_version": said.cuda_version,
        }  # fmt: skip
    return {
        "backend": cfg.backend, "device": cfg.device, "torch_version": str(env.get("torch", "")),
        "nccl_version": str(env.get("nccl", "")), "cuda_version": str(env.get("cuda", "")),
    }  # fmt: skip


INCONCLUSIVE = "inconclusive"
"""runs.outcome of an isolate or check run that passed with nothing confirmed bad and a unit the evidence could not
settle (besides "passed" and "failed"): no baseline takes it (queries.healthy takes "passed" alone)."""

DIGESTED = ("hostlist", "started", "world_size", "nodes", "config")
"""The run's columns its digest covers, with its results' rows."""
DIGESTED_ROW = ("op", "size", "dtype", "redop", "root", "in_place", "group", "time_us", "busbw", "wrong")


def results_digest(identity: Row, rows: list[SummaryRow]) -> str:
    """The sha256 of what the run measured: where and when (its hosts, start, world size, node count, config
    fingerprint) and its rows' figures. The same results recorded twice (one nccl-tests file imported twice,
    a run directory copied) have one digest; reading the run again gives the same one."""
    plain = [[identity[key] for key in DIGESTED], [[getattr(row, key) for key in DIGESTED_ROW] for row in rows]]
    return hashlib.sha256(json.dumps(plain).encode()).hexdigest()


def started_of(run: RunDir, statuses: dict[int, RankStatus]) -> float:
    """When the run started: its first rank's start, else when its directory was made."""
    return min((s.started for s in statuses.values()), default=run.meta_file.stat().st_mtime)


def cluster_of(cfg: Config, env: dict[str, Any]) -> str:
    """history.cluster, else Slurm's cluster name as rank 0 saw it, else 'local'."""
    return str(cfg.history.cluster or env.get("variables", {}).get("SLURM_CLUSTER_NAME") or "local")


def _ended(run: RunDir, statuses: dict[int, RankStatus]) -> float:
    if run.summary_file.exists():
        return run.summary_file.stat().st_mtime
    return max((s.updated for s in statuses.values()), default=time.time())


def _owner(path: Path) -> str:
    import pwd

    uid = path.stat().st_uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _version() -> str:
    try:
        return metadata.version("collbench")
    except metadata.PackageNotFoundError:
        return os.environ.get("COLLBENCH_VERSION", "unknown")


def _result(row: SummaryRow) -> Row:
    return {
        "op": row.op, "size": row.size, "requested_size": row.requested_size, "count": row.count,
        "dtype": row.dtype, "redop": row.redop, "root": row.root, "in_place": row.in_place, "nranks": row.nranks,
        "time_us": row.time_us, "algbw": row.algbw, "busbw": row.busbw, "wrong": row.wrong,
        "slowest_rank": row.slowest_rank, "slowest_host": row.slowest_host, "group": row.group,
    }  # fmt: skip


def _hosts(statuses: dict[int, RankStatus], summary: Summary, outcome: RunOutcome, wrong: dict[int, int]) -> list[Row]:
    """Each host's ranks, those that failed or stopped (facts), and the run's verdict on it: its ranks the
    verdict blames for a failure and the cause in words, the report's line when it is slow at its own work, and
    the wrong elements on its ranks (`wrong`: rank -> its wrong elements)."""
    ranks = Counter(s.host for s in statuses.values())
    failed = Counter(s.host for s in statuses.values() if s.state in (RankState.FAILED, RankState.STOPPED))
    blamed = _blamed(outcome) if not summary.passed else {}
    slow = _slow_hosts(outcome)
    host_of = {rank: status.host for rank, status in statuses.items()}
    wrong_ranks = {host: sorted(r for r in wrong if host_of.get(r) == host) for host in ranks}
    return [
        {
            "host": host,
            "ranks": n,
            "failed_ranks": failed[host],
            "blamed_ranks": len(blamed.get(host, [])),
            "cause": cause_words(blamed.get(host, [])),
            "slow": slow.get(host, ""),
            "wrong": sum(wrong[r] for r in wrong_ranks[host]),
            "wrong_ranks": ",".join(map(str, wrong_ranks[host])),
        }
        for host, n in sorted(ranks.items())
    ]


def _blamed(outcome: RunOutcome) -> dict[str, list[RankEnd]]:
    """Host -> the ends of its ranks that the verdict names as the cause (postmortem's CAUSES): not those srun's
    clean-up stopped after another rank failed, nor those that only noticed a lost peer."""
    ends = outcome.postmortem.ends.values() if outcome.postmortem else ()
    blamed: dict[str, list[RankEnd]] = {}
    for end in ends:
        if end.kind in CAUSES:
            blamed.setdefault(end.host, []).append(end)
    return blamed


CAUSE_VERBS = {"own": "failed", "setup": "failed in set-up", "dead": "died", "lost": "lost", "hung": "hung"}
"""A blamed rank's end (postmortem's CAUSES) as a verb."""


def cause_words(ends: list[RankEnd]) -> str:
    """'rank 1 died: its process 4242 is gone, with nothing recorded': the postmortem's words for the blamed ranks
    of one host, ranks that ended alike together; '' for none."""
    alike: dict[tuple[str, str], list[int]] = {}
    for end in sorted(ends, key=lambda e: e.rank):
        alike.setdefault((CAUSE_VERBS.get(end.kind, end.state), end.how), []).append(end.rank)
    return "; ".join(
        f"{'rank' if len(ranks) == 1 else 'rank(s)'} {rank_spans(ranks)} {verb}: {how}"
        for (verb, how), ranks in alike.items()
    )


def wrong_by_rank(run: RunDir, rows: list[SummaryRow]) -> dict[int, int]:
    """Rank -> the wrong elements in its output over the run's measurements, each measurement once as the summary
    counts it: read from the results of the ranks the summary's rows name (none in a healthy run)."""
    named = sorted({rank for row in rows for rank in row.wrong_ranks})
    files = [run.rank_results(rank) for rank in named if run.rank_results(rank).is_file()]
    wrong: Counter[int] = Counter()
    seen: set[tuple[int, Any]] = set()
    for result in iter_rank_results(files, keep_times=False, on_damage=lambda _: None):
        if result.wrong > 0 and (result.rank, result.key) not in seen:
            seen.add((result.rank, result.key))
            wrong[result.rank] += result.wrong
    return dict(wrong)


def _slow_hosts(outcome: RunOutcome) -> dict[str, str]:
    """host -> the report's line on it, by the report's own rule (jobs.inspect.analysis): a host is slow
    only on evidence of its own; which rank's timer read longest in a collective is none."""
    slow = outcome.analysis.slow_hosts if outcome.analysis else []
    return {line.split(": ", 1)[0]: line for line in slow}


def _fabric(plain: dict[str, Any], hosts: set[str]) -> list[Row]:
    """One row per (finding, host it names); a finding that names none of the run's hosts: host ''. A failed
    requirement names the hosts of its record (failure_records), none where its code blames no host (not_run:
    it could not be checked); a summary written before there were records, and a finding, the hosts their
    words name."""
    found = [row for line in map(str, plain.get("findings", [])) for row in _named_rows("finding", line, hosts)]
    records = plain.get("failure_records")
    if not isinstance(records, list):
        return found + [
            row for line in map(str, plain.get("failures", [])) for row in _named_rows("failure", line, hosts)
        ]
    for record in records:
        named = sorted({str(host) for host in record.get("hosts", [])} & hosts if _blames(record) else set()) or [""]
        found += [{"kind": "failure", "host": host, "line": str(record.get("line", ""))} for host in named]
    return found


def _blames(record: dict[str, Any]) -> bool:
    code = next((code for code in CODES if code == record.get("code")), None)
    return code is not None and drains(code)


def _named_rows(kind: str, line: str, hosts: set[str]) -> list[Row]:
    return [{"kind": kind, "host": host, "line": line} for host in sorted(_hosts_named(line, hosts)) or [""]]


HOST_TOKEN = re.compile(r"[A-Za-z0-9_.-]+(?:\[[0-9,\-]+\][A-Za-z0-9_.-]*)?")


def _hosts_named(line: str, hosts: set[str]) -> set[str]:
    named: set[str] = set()
    for token in HOST_TOKEN.findall(line):
        try:
            named.update(h for h in expand_hostlist(token) if h in hosts)
        except BadHostlist:
            continue
    return named


def _isolate(verdict: IsolateVerdict) -> dict[str, list[Row]]:
    """The verdict at its three grains: each node over all its rails (rail None) and each (node, rail), the slow
    links (rail None: node grain) and the slow switch links. An isolate.json before format 3 has no rails and
    no switches: its rows are the nodes' and links' alone. A unit the verdict could not settle is no fault:
    its node's row is not bad, it has no link, switch or finding row (the run's outcome says inconclusive)."""
    bad = set(verdict.bad_nodes)
    nodes = [
        {"host": n.host, "measurements": n.measurements, "slow": n.slow, "median_busbw": n.median_busbw,
         "ratio": n.ratio, "bad": n.host in bad, "rail": None, "nic": ""}
        for n in verdict.nodes
    ]  # fmt: skip
    bad_rails = {(r.host, r.rail) for r in verdict.bad_rails}
    nodes += [
        {"host": u.host, "measurements": u.measurements, "slow": u.slow, "median_busbw": u.median_busbw,
         "ratio": u.ratio, "bad": (u.host, u.rail) in bad_rails, "rail": u.rail, "nic": _nic(verdict, u.rail)}
        for u in verdict.units
        if u.rail >= 0  # a node-grain verdict's units are its nodes again, rail -1: their rows are above
    ]  # fmt: skip
    links = [
        {"host_a": link.nodes[0], "host_b": link.nodes[-1], "busbw": link.busbw, "ratio": link.ratio,
         "rail": _rail(link.rail)}
        for link in verdict.bad_links
    ]  # fmt: skip
    switches = [_switch(fault) for fault in verdict.switch_faults]
    findings = [{"host": f.host, "code": f.code, "figure": f.figure} for f in verdict.findings]
    return {"isolate_nodes": nodes, "isolate_links": links, "isolate_switches": switches, "findings": findings}


def _rail(rail: int) -> int | None:
    """The history's rail: None for every rail (the records' -1)."""
    return None if rail < 0 else rail


def _nic(verdict: IsolateVerdict, rail: int) -> str:
    """The rail's HCA or interface as the run's config named it; '' when it named none."""
    return verdict.nics[rail] if 0 <= rail < len(verdict.nics) else ""


def _listed(hosts: list[str]) -> str:
    """The hosts as a hostlist the history's readers expand (history node, switch): a name no hostlist can
    hold is left out (no Slurm node is named so) instead of making the whole column unreadable."""
    return collect_hostlist(host for host in hosts if can_be_listed(host))


def _switch(fault: SwitchVerdict) -> Row:
    sides = [_listed(side) for side in fault.sides] + ["", ""]
    ends = [*fault.switches, "", ""]
    return {
        "switches": switches_name(fault.switches), "switch_a": ends[0], "switch_b": ends[1], "rail": _rail(fault.rail),
        "side_a": sides[0], "side_b": sides[1], "measurements": fault.measurements, "slow": fault.slow,
        "busbw": fault.busbw, "ratio": fault.ratio,
    }  # fmt: skip


def _isolate_verdict(run: RunDir, outcome_of: Callable[[], RunOutcome]) -> IsolateVerdict:
    if run.isolate_verdict.exists():
        return ISOLATE_VERDICT.read(run.isolate_verdict)
    return verdict_record(assess_isolate(run, outcome_of()))
