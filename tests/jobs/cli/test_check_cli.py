"""`collbench check` without a cluster: outside an allocation it says so in one line (exit 2, nothing
created); inside one (Slurm's variables), --dry-run prints the exact srun step on the allocation's nodes
and the plan, and starts nothing; the config it runs gives each round its share of the budget."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from jobs.cli.check_setup import check_config, round_budget_s
from jobs.isolate.check_plan import START_SHARE
from tests.conftest import collbench

ALLOCATION = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "gpu[01-05]"}


def env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_JOB") and k != "SLURM_NODELIST"}
    return {**clean, **extra}


def test_outside_an_allocation_check_says_so_in_one_line_and_creates_nothing(workdir: Path) -> None:
    result = collbench("check", f"output_dir={workdir / 'runs'}", cwd=workdir, env=env())
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        "collbench: error: not inside a Slurm allocation (SLURM_JOB_ID is not set): "
        "run it from salloc or a batch script\n"
    )
    assert not (workdir / "runs").exists()


def test_the_dry_run_prints_one_step_on_the_allocation_and_a_plan_of_three_rounds(workdir: Path) -> None:
    result = collbench(
        "check", "--dry-run", "slurm.exclude=gpu03", "slurm.tasks_per_node=8", "check.budget_s=40",
        f"output_dir={workdir / 'runs'}", cwd=workdir, env=env(**ALLOCATION),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "# one job step of allocation 4242:"
    assert re.match(
        r"srun -v --job-name=collbench --nodes=4 --ntasks-per-node=8 --nodelist=gpu01,gpu02,gpu04,gpu05 "
        r"--export=ALL,SUBMITIT_EXECUTOR=slurm --kill-on-bad-exit=1 "
        r"\S+ -u -m submitit\.core\._submit \S+/RUN_ID/submitit$",
        lines[1],
    ), lines[1]
    assert lines[2].startswith(
        "# check plan: 4 nodes, 3 round(s), 5 measurement(s) on each of 8 rails at once (40 groups), then up to 1 "
        "round(s) measuring the suspects again; each 1000 ms"
    )
    assert (
        lines[3] == "# each group measures 1M, 256M in turn, and stops before a size that would not finish "
        "within its round's share of the budget"
    )
    assert lines[4] == "# round 1 (within 6 s): gpu01+gpu02+gpu04+gpu05" and len(lines) == 8, "(40 s - 40%) / 4"
    assert (
        lines[7] == "# round 4 (within 6 s), only if a unit is suspect: each suspect again, with a partner held healthy"
    )
    assert not (workdir / "runs").exists()


def test_a_one_node_allocation_is_pointed_to_the_node_mode(workdir: Path) -> None:
    one = {"SLURM_JOB_ID": "4243", "SLURM_JOB_NODELIST": "gpu07"}
    result = collbench("check", f"output_dir={workdir / 'runs'}", cwd=workdir, env=env(**one))
    assert result.returncode == 2 and "check --node" in result.stderr, result.stderr


def test_each_round_gets_its_share_of_the_budget_and_every_group_measures_the_probe_first(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[01-06]")
    monkeypatch.chdir(workdir)
    words = ["check.budget_s=10", "check.probe_size=2M", "check.from_history=false", f"output_dir={workdir}"]
    cfg, _ = check_config(None, words)
    assert cfg.isolate.round_budget_s == pytest.approx(10 * (1 - START_SHARE) / 4), "3 rounds at 6 nodes, 1 again"
    assert cfg.isolate.probe_size == 2 << 20
    assert cfg.measured_bench().size_list() == [2 << 20, 256 << 20]
    assert cfg.bench.time_budget_ms == 375, "10 s x 30% over 4 rounds of 2 sizes: the probe is one of them"
    assert round_budget_s(25, 3) == pytest.approx(5.0) and round_budget_s(60, 1) == pytest.approx(36.0)


def test_with_leaves_in_the_config_the_dry_run_pairs_within_each_leaf_then_across(workdir: Path) -> None:
    result = collbench(
        "check", "--dry-run", "slurm.exclude=gpu03", "topology.switches={s1: 'gpu[01-02]', s2: 'gpu[04-05]'}",
        f"output_dir={workdir / 'runs'}", cwd=workdir, env=env(**ALLOCATION),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-5] == (
        "# leaves (config topology.switches): s1 = gpu[01-02], s2 = gpu[04-05]; round 2 pairs within, round 3 across"
    )
    assert lines[-3] == "# round 2 (within 9 s): gpu01+gpu02 gpu04+gpu05", lines
    within = {"gpu01": "s1", "gpu02": "s1", "gpu04": "s2", "gpu05": "s2"}
    pairs = [pair.split("+") for pair in lines[-2].split(": ")[1].split()]
    assert len(pairs) == 2 and all(within[a] != within[b] for a, b in pairs), lines[-2]
