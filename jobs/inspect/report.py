"""Tables and verdicts from a run directory alone: what `run`, `wait` and `report` print.

Assessing a run reads it and writes nothing (a baseline on a read-only mount, a run another user owns);
rendering prints from memory. The run's table.txt and summary.json are written once, when the run has
ended, by jobs.ending (rank 0 at the end of the job, or the first `wait` that sees it end).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from collectives.results import DamagedLine, SummaryRow, iter_rank_results, placement_name, summarize
from collectives.table import SweepHeader, render_op_table
from jobs.config.model import Config
from jobs.inspect.analysis import Analyser, Analysis, RunScope
from jobs.inspect.fabric import FabricReport, fabric_report, imported_fabric, line_rate
from jobs.inspect.postmortem import Postmortem, examine, rank_spans
from jobs.inspect.run_header import RankEnvironment, rank_places, read_environments, versions_line
from jobs.inspect.setup_time import setup_time
from jobs.rundir.layout import RunDir, rank_files, rank_of
from jobs.rundir.records.codec import RecordError
from jobs.rundir.records.config import load_run_config
from jobs.rundir.records.rank import STATUS, RankStatus
from jobs.rundir.records.run import LauncherName
from jobs.rundir.records.slurm import JobFacts
from jobs.rundir.records.summary import SUMMARY, SetupTime, Summary


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Verdicts beyond #wrong: the least busbw a size range must reach."""

    min_busbw: float | None = None
    """GB/s; None checks nothing."""
    min_size: int = 0
    max_size: int | None = None

    def problems(self, rows: list[SummaryRow]) -> list[str]:
        """A row under the floor, a line each; one line where no row is in the size range (a gate that
        checked nothing must not pass)."""
        if self.min_busbw is None:
            return []
        in_range = [row for row in rows if self.in_range(row.size)]
        if rows and not in_range:
            return [self.matched_nothing(rows)]
        found = []
        for row in in_range:
            if row.busbw < self.min_busbw:
                root = f" root {row.root}" if row.root >= 0 else ""
                found.append(
                    f"{row.op} size {row.size} {placement_name(row.in_place)}{root}: busbw {row.busbw:.3f} GB/s "
                    f"is below --min-busbw {self.min_busbw:g}"
                )
        return found

    def in_range(self, size: int) -> bool:
        return size >= self.min_size and (self.max_size is None or size <= self.max_size)

    def matched_nothing(self, rows: list[SummaryRow]) -> str:
        from collectives.sizes import format_size

        low, high = (format_size(bound) if bound else "" for bound in (self.min_size, self.max_size))
        sizes = sorted({row.size for row in rows})
        return (
            f"--min-busbw {self.min_busbw:g} --busbw-sizes {low}:{high} matched no row (the run measured "
            f"{format_size(sizes[0])} to {format_size(sizes[-1])} bytes): nothing was checked"
        )


@dataclass(slots=True)
class RunOutcome:
    config: Config
    statuses: dict[int, RankStatus]
    rows: list[SummaryRow]
    problems: list[str] = field(default_factory=list)
    """One line per failed rank, missing rank or wrong result; empty when the run passed."""
    analysis: Analysis | None = None
    """The per-rank and per-host view, when asked for."""
    postmortem: Postmortem | None = None
    """How each rank ended, and what caused a failure."""
    setup: SetupTime | None = None
    """The process group's set-up time over the ranks that recorded it."""
    fabric: FabricReport | None = None
    """Which transport NCCL used and the state of every RDMA port, per host."""
    environments: dict[int, RankEnvironment] = field(default_factory=dict)
    """rank -> what its env/rank-N.json says: the versions and the GPU above the tables."""

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    @property
    def ended(self) -> bool:
        """Every rank has recorded its end or is known dead, lost or hung: the verdict will not change."""
        return self.postmortem is not None and self.postmortem.ended()


def result_files(run: RunDir) -> list[Path]:
    return rank_files(run.results_dir, ".jsonl")


@dataclass(slots=True)
class Statuses:
    """Every rank's status on file, and the files that could not be read (named, one line each)."""

    by_rank: dict[int, RankStatus] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)


def read_all_statuses(run: RunDir) -> Statuses:
    found = Statuses()
    for path in rank_files(run.status_dir, ".json"):
        try:
            status = STATUS.read(path)
        except FileNotFoundError:  # filed away by a new attempt meanwhile
            continue
        except (OSError, RecordError) as error:
            found.unreadable.append(f"rank {rank_of(path)}: status unreadable: {error}")
            continue
        found.by_rank[status.rank] = status
    return found


def read_statuses(run: RunDir) -> dict[int, RankStatus]:
    """rank -> its status, leaving out files that cannot be read (assess names them)."""
    return read_all_statuses(run).by_rank


class OutcomeOnce:
    """An ended run's outcome (with its per-rank view) read at most once, on first use, then shared: what a
    run's end feeds (its final files, the history, the exports) each need it, and at thousands of ranks
    every read of the results takes seconds."""

    def __init__(self, run: RunDir) -> None:
        self.run: RunDir = run
        self._outcome: RunOutcome | None = None

    def __call__(self) -> RunOutcome:
        if self._outcome is None:
            self._outcome = assess(self.run, with_analysis=True)
        return self._outcome


def assess(
    run: RunDir, thresholds: Thresholds | None = None, *, with_analysis: bool = False, facts: JobFacts | None = None
) -> RunOutcome:
    """Every rank's end and the aggregated rows, with what went wrong, cause first; the results are
    read once."""
    cfg = load_run_config(run)
    on_file = read_all_statuses(run)
    statuses = on_file.by_rank
    postmortem = examine(run, statuses, cfg.world_size, facts)
    damaged: list[DamagedLine] = []
    records = iter_rank_results(result_files(run), keep_times=False, on_damage=damaged.append)
    analyser = Analyser() if with_analysis else None
    rows = summarize(analyser.watch(records) if analyser else records, average=cfg.bench.average)
    imported = cfg.launcher == "imported"
    fabric = imported_fabric() if imported else fabric_report(run, cfg.backend, cfg.fabric, statuses)
    outcome = RunOutcome(
        config=cfg, statuses=statuses, rows=rows, postmortem=postmortem, setup=setup_time(statuses), fabric=fabric,
        environments=read_environments(run),
    )  # fmt: skip
    damage = [line for line in damaged if not (line.last and postmortem.ends[rank_of(line.path)].kind == "running")]
    outcome.problems = postmortem.problems + on_file.unreadable + _damage_problems(damage)
    outcome.problems += _row_problems(rows, cfg.world_size, None if imported else statuses)
    outcome.problems += (thresholds or Thresholds()).problems(rows)
    outcome.problems += [f"fabric: {failure}" for failure in fabric.failure_lines()]
    outcome.analysis = analyser.finish(run, _scope(run, outcome)) if analyser else None
    return outcome


def _scope(run: RunDir, outcome: RunOutcome) -> RunScope:
    """What the per-host view judges the run as a whole by: its rows, the nodes' line rate, its hosts."""
    cfg = outcome.config
    hosts = sorted({status.host for status in outcome.statuses.values()})
    slurm = run.read_meta().launcher is LauncherName.SLURM
    return RunScope(
        rows=outcome.rows,
        line=line_rate(run, cfg.backend, cfg.env, hosts, cfg.fabric.line_gbps),
        hosts=hosts,
        isolate_config=str(run.config_file) if slurm and not cfg.spec.in_rounds else "",
        in_rounds=cfg.spec.in_rounds,
    )


def _damage_problems(damaged: list[DamagedLine]) -> list[str]:
    """A line still being written by a running rank is not damage; any other unreadable line is."""
    return [
        f"rank {rank_of(line.path)}: results line damaged, left out: {line.describe()}"
        + (" (its writer was likely killed mid-write)" if line.last else "")
        for line in damaged
    ]


def _row_problems(rows: list[SummaryRow], world_size: int, statuses: dict[int, RankStatus] | None) -> list[str]:
    """`statuses`: where each rank ran, to name the hosts of wrong elements; None for an imported run, whose
    #wrong nccl-tests counted over every rank without saying whose."""
    problems = []
    for row in rows:
        placement = placement_name(row.in_place)
        if row.wrong > 0:
            problems.append(
                f"{_where(row)}{row.op} size {row.size} {placement}: #wrong {row.wrong}{_whose(row, statuses)}"
            )
        expected = len(row.members) if row.members else world_size
        if row.ranks_reporting != expected or row.missing_ranks:
            missing = f" (missing: rank(s) {rank_spans(row.missing_ranks)})" if row.missing_ranks else ""
            problems.append(
                f"{_where(row)}{row.op} size {row.size} {placement}: only {row.ranks_reporting}/{expected} ranks "
                f"reported{missing}"
            )
        if row.duplicate_ranks:
            problems.append(
                f"{_where(row)}{row.op} size {row.size} {placement}: rank(s) {rank_spans(row.duplicate_ranks)} "
                "reported it more than once (only the first counts)"
            )
    return problems


def _whose(row: SummaryRow, statuses: dict[int, RankStatus] | None) -> str:
    """' on rank(s) 1 (n1)', ' on rank(s) 1, 3 (n1); 4 (n2)': the ranks with wrong elements, by host."""
    if statuses is None:
        return " (nccl-tests' count over every rank: it does not say whose)"
    by_host: dict[str, list[int]] = {}
    for rank in row.wrong_ranks:
        status = statuses.get(rank)
        by_host.setdefault(status.host if status else "?", []).append(rank)
    return " on rank(s) " + "; ".join(f"{', '.join(map(str, ranks))} ({host})" for host, ranks in by_host.items())


def _where(row: SummaryRow) -> str:
    return f"{row.group}: " if row.group else ""


def sweep_header(cfg: Config) -> SweepHeader:
    """The tables' caption figures from the bench the task measured."""
    bench = cfg.measured_bench()
    return SweepHeader(
        min_bytes=bench.min_bytes, max_bytes=bench.max_bytes, step_factor=bench.step_factor,
        warmup_iters=bench.warmup_iters, iters=bench.iters, check=bench.check, backend=cfg.backend,
        graph_launches=bench.cuda_graph_launches, average=bench.average, report_cputime=bench.report_cputime,
    )  # fmt: skip


def render_tables(outcome: RunOutcome) -> list[str]:
    """The text report: the versions the ranks ran with (nccl-tests' first line), then a table per op (per
    group and op for isolate), each with its ranks' devices; the set-up time and the fabric under them."""
    cfg = outcome.config
    header = sweep_header(cfg)
    places = rank_places(outcome.statuses, outcome.environments)
    lines = [f"# {versions_line(outcome.environments, cfg.backend)}", "#"] if outcome.environments else []
    for group in dict.fromkeys(row.group for row in outcome.rows):  # collbench isolate: a table per group
        rows = [row for row in outcome.rows if row.group == group]
        members = set(rows[0].expected_ranks) if group else None
        if group:
            lines += [f"# ---- {group}", ""]
        for op in dict.fromkeys(row.op for row in rows):
            op_rows = [row for row in rows if row.op == op]
            lines += render_op_table(op, op_rows, header, [p for p in places if members is None or p.rank in members])
            lines.append("")
    if outcome.setup is not None:
        lines += [f"# {outcome.setup.describe(cfg.backend)}", ""]
    if outcome.fabric is not None:
        lines += [*outcome.fabric.lines(), ""]
    return lines


def summary_of(run: RunDir, outcome: RunOutcome) -> Summary:
    """summary.json's record of an outcome."""
    return Summary(
        run_id=run.run_id,
        passed=outcome.passed,
        problems=outcome.problems,
        setup=outcome.setup,
        fabric=outcome.fabric.to_json() if outcome.fabric else None,
        rows=outcome.rows,
    )


def read_summary(run: RunDir) -> Summary | None:
    """summary.json as recorded when the run ended; None when it was not recorded (yet)."""
    return SUMMARY.read_if_any(run.summary_file)
