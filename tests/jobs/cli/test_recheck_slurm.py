"""`collbench recheck` on the project's Slurm cluster: a node collbench drained is held in a maintenance
reservation with an idle partner, resumed into it, checked by `collbench check --apply` in an allocation of it,
and handed back; the check's run is found in its own folder, and the reservation is gone after. Every drain and
reservation is undone whatever happens."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from jobs.rundir.layout import RunDir
from slurm.hostlist import expand_hostlist
from tests.conftest import SlurmCluster, collbench
from tests.jobs.cli.test_schedule_slurm import drained_by_check

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

NODE = "n3"
REASON = "collbench:slow_node by check run=EARLIER busbw 0.40 of healthy 1 GB/s"
ARGS = ["--config", "testcluster", "slurm.tasks_per_node=1", "check.budget_s=25", "check.from_history=false",
        "history.record=false"]  # fmt: skip


def test_a_node_collbench_drained_is_rechecked_in_a_reservation_and_handed_back(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    env = slurm_cluster.env()
    try:
        subprocess.run(["scontrol", "update", f"NodeName={NODE}", "State=DRAIN", f"Reason={REASON}"], env=env,
                       check=True)  # fmt: skip
        assert drained_by_check(NODE, env) == REASON
        result = collbench("recheck", NODE, *ARGS, "--partners", "1", cwd=tmp_path, env=env, timeout=240)
        assert result.returncode == 0, result.stdout + result.stderr
        held = re.search(rf"^# {NODE} resumed into reservation (collbench-recheck-\d+) with n\d$", result.stdout, re.M)
        assert held, result.stdout
        assert re.search(
            rf"^RESUMED {NODE}: recheck passed it \(drained by collbench for slow_node in EARLIER\)$",
            result.stdout,
            re.M,
        ), result.stdout
        assert not drained_by_check(NODE, env), "back in service"
        shown = subprocess.run(["scontrol", "show", "reservation"], capture_output=True, text=True, env=env).stdout
        assert held[1] not in shown, "the reservation is released"
        [run] = [path for path in (tmp_path / "runs" / held[1]).iterdir() if RunDir(path).meta_file.is_file()]
        assert RunDir(run).read_meta().launcher == "slurm-step", "the check's run, in the recheck's own folder"
        assert NODE in expand_hostlist((run / "check" / "vetted").read_text().strip())
    finally:
        if drained_by_check(NODE, env):
            subprocess.run(["scontrol", "update", f"NodeName={NODE}", "State=RESUME"], env=env, check=False)
        shown = subprocess.run(["scontrol", "show", "reservation"], capture_output=True, text=True, env=env).stdout
        for name in re.findall(r"ReservationName=(collbench-recheck-\d+)", shown):
            subprocess.run(["scontrol", "delete", f"ReservationName={name}"], env=env, check=False)
