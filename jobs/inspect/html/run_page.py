"""One run as a page, in the issue's order: the verdict and exit status with the command; the nccl-tests
tables; busbw against size; for isolate and check, the pair matrix and what it named; the per-host view;
the fabric; the run's place in the history; the logs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from jobs.config.exit_codes import EXIT_INCONCLUSIVE
from jobs.inspect.check_verdict import CheckOutcome, assess_check
from jobs.inspect.html.banner import Banner, Command, banner, run_command
from jobs.inspect.html.curves import busbw_plot, op_curves
from jobs.inspect.html.log_links import Logs, log_links
from jobs.inspect.html.pages import render
from jobs.inspect.html.pair_sections import PairSection, pair_section
from jobs.inspect.html.plain import HistoryPlace
from jobs.inspect.html.tables import ResultsTable, results_tables
from jobs.inspect.isolate_verdict import IsolateOutcome, assess_isolate
from jobs.inspect.report import RunOutcome, sweep_header
from jobs.rundir.layout import RunDir

HOSTS_OPEN_UP_TO = 64
"""The fabric's per-host lines are open up to this many hosts, folded beyond."""


@dataclass(frozen=True, slots=True)
class RunPage:
    title: str
    verdict: Banner
    command: Command
    tables: list[ResultsTable]
    curves: Markup | None
    pairs: PairSection | None
    outcome: RunOutcome
    history: HistoryPlace | None
    history_asked: bool
    logs: Logs
    hosts_open: bool


def render_run_page(
    run: RunDir,
    outcome: RunOutcome,
    exit_code: int,
    links_from: Path,
    *,
    isolate: IsolateOutcome | None = None,
    check: CheckOutcome | None = None,
    history: HistoryPlace | None = None,
    history_asked: bool = False,
) -> str:
    """The run's page. `exit_code`: the command's own; `links_from`: the folder the page is written to (the
    logs are linked relative to it). An isolate or check run's verdict is assessed here unless given.
    `history`: its place in the history (with `history_asked`: --against-history was given)."""
    cfg = outcome.config
    if cfg.spec.in_rounds and isolate is None:
        isolate = assess_isolate(run, outcome)
    if "check" in cfg.spec.verdict_files and check is None:
        check = assess_check(run, outcome, isolate)
    pairs = pair_section(isolate, cfg, check) if isolate is not None else None
    named = pairs.named_hosts if pairs else []
    page = RunPage(
        title=f"collbench {_kind(outcome)} {run.run_id}",
        verdict=_verdict(outcome, exit_code, pairs, history),
        command=run_command(run, cfg),
        tables=results_tables(outcome.rows, sweep_header(cfg)),
        curves=busbw_plot({"busbw against size": op_curves(outcome.rows)}, f"collbench {run.run_id}"),
        pairs=pairs,
        outcome=outcome,
        history=history,
        history_asked=history_asked,
        logs=log_links(run, outcome, links_from, named),
        hosts_open=outcome.fabric is None or len(outcome.fabric.hosts) <= HOSTS_OPEN_UP_TO,
    )
    return render("run.html.j2", page=page, run=run)


def _kind(outcome: RunOutcome) -> str:
    return outcome.config.spec.page_kind


def _verdict(outcome: RunOutcome, exit_code: int, pairs: PairSection | None, history: HistoryPlace | None) -> Banner:
    kind = _kind(outcome)
    lines = [f"FAILED: {problem}" for problem in outcome.problems]
    if outcome.analysis is not None:
        lines += outcome.analysis.verdict()
    if history is not None:
        lines += history.regressions
    if pairs is not None:
        named = [f"{f.host}: {f.code}, {f.figure}" for f in pairs.findings]
        return banner(_pairs_headline(exit_code, pairs), exit_code, kind, named + pairs.inconclusive + lines)
    headline = "PASSED" if exit_code == 0 else f"FAILED: {lines[0]}" if lines else "FAILED"
    return banner(headline.replace("FAILED: FAILED: ", "FAILED: "), exit_code, kind, lines)


def _pairs_headline(exit_code: int, pairs: PairSection) -> str:
    hosts = ", ".join(pairs.named_hosts[:8]) + (
        f" and {len(pairs.named_hosts) - 8} more" if len(pairs.named_hosts) > 8 else ""
    )
    if exit_code == EXIT_INCONCLUSIVE:
        units = [line.removeprefix("INCONCLUSIVE ").split(": ", 1)[0] for line in pairs.inconclusive]
        more = f" and {len(units) - 4} more" if len(units) > 4 else ""
        return f"INCONCLUSIVE {', '.join(units[:4])}{more}: nothing confirmed, drain nothing for it"
    if pairs.vets:
        if exit_code == 4:
            return "COULD NOT SETTLE: drain nothing for it"
        return f"CORDONED {hosts}" if pairs.named_hosts else ("SLOW LINK" if exit_code else "every node VETTED")
    if pairs.findings:
        return f"FOUND {hosts}" if pairs.named_hosts else f"FOUND {pairs.findings[0].host}"
    return "NOTHING FOUND" if exit_code == 0 else "FAILED: the run did not finish its rounds"
