"""`collbench check --node`: one node on its own, for a Slurm prolog or HealthCheckProgram. Its local ranks
(one per GPU; on the CPU check.local_ranks) run all_reduce over the loopback, no network, with the local
launcher, within check.local_budget_s; the answer is one line a drain reason can carry."""

from __future__ import annotations

import socket
import sys
import time
from dataclasses import replace

from jobs.cli.exit_codes import EXIT_CANNOT_RUN
from jobs.config.model import Config, derive, load_config
from jobs.inspect.report import RunOutcome, assess
from jobs.launchers.local import stdio_redirected_to
from jobs.launchers.registry import launcher_for

CANCEL_WAIT_S = 15.0
COLLECTIVE_SHARE = 0.3
"""Of the budget, the longest wait for a peer: a hung rank is named by the one that gave up on it, seconds
before the budget ends even when the interpreters took seconds to start."""
END_WAIT_S = 1.5
"""Of the budget, what the verdict keeps for itself: the ranks are stopped this long before it ends."""


def node_config(name: str | None, words: list[str]) -> Config:
    """The user's config, as one local sweep: all_reduce at check.sizes, bounded by the node budget."""
    settings = load_config(name, [word for word in words if word.startswith(("check.", "backend="))]).check
    cfg = load_config(name, [*words, "launcher=local", "nodes=1", "task=sweep", f"ranks={settings.local_ranks}"])
    sizes = list(settings.local_sizes)
    bench = replace(
        cfg.bench,
        ops=["all_reduce"],
        sizes=sizes,
        min_bytes=min(sizes),
        max_bytes=max(sizes),
        warmup_iters=1,
        min_iters=2,
        time_budget_ms=float(round(min(500.0, settings.local_budget_s * 100 / len(sizes)))),
    )
    timeouts = replace(cfg.timeouts, collective_s=max(1.0, settings.local_budget_s * COLLECTIVE_SHARE))
    loopback = {"GLOO_SOCKET_IFNAME": "lo"} if cfg.backend == "gloo" else {}
    return derive(cfg, bench=bench, timeouts=timeouts, env={**cfg.env, **loopback})


def check_node(name: str | None, words: list[str], dry_run: bool = False) -> int:
    started = time.monotonic()
    host = socket.gethostname()
    cfg = node_config(name, words)
    launcher = launcher_for(cfg)
    if dry_run:
        print(launcher.request(cfg).text, end="")
        return 0
    run = launcher.launch(cfg).run
    left = cfg.check.local_budget_s - END_WAIT_S - (time.monotonic() - started)
    with stdio_redirected_to(run.submitit_dir / "controller.log"):  # the ranks' log stays in the run
        [result] = launcher.wait([run], max(0.1, left), None)
        ran_out = result.still_running
        if ran_out:
            launcher.cancel(run)
            launcher.wait([run], CANCEL_WAIT_S, None)
    took = time.monotonic() - started
    line, code = _one_line(host, assess(run), cfg, took, ran_out)
    print(line)
    return code


def _one_line(host: str, outcome: RunOutcome, cfg: Config, took: float, ran_out: bool) -> tuple[str, int]:
    ranks = f"{cfg.world_size} local rank(s)"
    if ran_out:
        why = f": {outcome.problems[0]}" if outcome.problems else ""
        return f"FAIL {host}: all_reduce over {ranks} did not finish within {cfg.check.local_budget_s:g} s{why}", 1
    if outcome.problems:
        return f"FAIL {host}: {outcome.problems[0]}", 1
    done = [row for row in outcome.rows if row.complete]
    if not done:
        print(f"collbench: check --node measured nothing on {host}", file=sys.stderr)
        return f"UNKNOWN {host}: nothing measured; drain nothing for it", EXIT_CANNOT_RUN
    best = max(row.busbw for row in done)
    floor = cfg.check.local_min_busbw
    if floor and best < floor:
        return f"FAIL {host}: all_reduce over {ranks} reached {best:.3g} GB/s, under check.local_min_busbw {floor:g}", 1
    return f"OK {host}: all_reduce over {ranks}, busbw {best:.3g} GB/s, {took:.1f} s", 0
