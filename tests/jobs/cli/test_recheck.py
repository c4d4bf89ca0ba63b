"""`collbench recheck` against Slurm's commands as small scripts (tests/slurm/commands.py): which nodes it
takes, the lines it runs and in which order, how it settles each node after the check, and that it finds the
check's run by its run directory, never by the check's output. The real thing: test_schedule_slurm.py."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import CommandResult, collbench
from tests.slurm.commands import calls, fake_commands

CONFIG = ["--config", "testcluster", "slurm.tasks_per_node=1", "history.record=false"]
OURS = "collbench:slow_node by check run=R1 busbw 0.50 of healthy"
SINFO = f"""case "$*" in
  *"-t idle"*) printf 'n5\\nn6\\n';;
  *"%N|%T|%E"*) if [ -e {{checked}} ]; then printf 'n1|idle|none\\n'; else
      printf 'n1|drained|{OURS}\\nn2|drained|bad fan\\nn3|idle|none\\n'; fi;;
  *) printf 'n1\\nn2\\nn3\\n';;
esac"""
SALLOC = """: > {checked}
for word in "$@"; do case "$word" in output_dir=*) folder=${{word#output_dir=}};; esac; done
run="$folder/20261207-091500-slurm-step-0a1b2c"
if [ {makes_run} = yes ]; then mkdir -p "$run"; echo '{{}}' > "$run/run.json"; fi
echo "the check's own words"
exit {code}"""


def recheck(
    tmp_path: Path, *args: str, code: int = 0, makes_run: str = "yes", scontrol: str = "exit 0"
) -> CommandResult:
    checked = tmp_path / "checked"
    env = fake_commands(
        tmp_path,
        sinfo=SINFO.format(checked=checked),
        salloc=SALLOC.format(checked=checked, makes_run=makes_run, code=code),
        scontrol=scontrol,
    )
    return collbench("recheck", *args, *CONFIG, cwd=tmp_path, env=env, timeout=120)


def test_the_dry_run_names_the_nodes_left_and_prints_the_lines_in_order(tmp_path: Path) -> None:
    result = recheck(tmp_path, "n[1-3]", "--partner", "n5", "--dry-run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == [
        "# leave n2: drained by someone else (bad fan): only its owner resumes it",
        "# leave n3: idle, not drained: nothing to re-check",
    ]
    reserve, resume, salloc, release = lines[2:]
    name = re.search(r"ReservationName=(collbench-recheck-\d+) 'Nodes=n\[1,5\]' StartTime=now", reserve)
    assert name, reserve
    assert resume == "scontrol update NodeName=n1 State=RESUME"
    assert salloc.startswith(f"salloc --reservation={name[1]} --partition=debug '--nodelist=n[1,5]' --nodes=2 ")
    assert f" check --config testcluster slurm.tasks_per_node=1 history.record=false output_dir={tmp_path}" in salloc
    assert salloc.endswith(f"/runs/{name[1]} drain.apply=true"), "the check's run in a folder of its own"
    assert release == f"scontrol delete ReservationName={name[1]}"
    assert [call.split()[0] for call in calls(tmp_path)] == ["sinfo"], "a dry run changes nothing"


def test_a_node_the_check_passed_is_handed_back_and_the_reservation_released(tmp_path: Path) -> None:
    result = recheck(tmp_path, "ALL")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# n1 resumed into reservation collbench-recheck-" in result.stdout
    assert "the check's own words" in result.stdout, "the check speaks on this terminal"
    resumed = r"^RESUMED n1: recheck passed it \(drained by collbench for slow_node in R1\)$"
    assert re.search(resumed, result.stdout, re.M), result.stdout
    assert "# leave n3" not in result.stdout, "ALL names only the drained nodes it leaves"
    made = calls(tmp_path)
    name = re.search(r"ReservationName=(\S+)", made[3])
    assert name, made
    assert [call.split()[:3] for call in made] == [
        ["sinfo", "-h", "-N"], ["sinfo", "-h", "-N"], ["sinfo", "-h", "-N"],  # the partition, states, idle partners
        ["scontrol", "create", "reservation"], ["scontrol", "update", "NodeName=n1"],
        ["salloc", f"--reservation={name[1]}", "--partition=debug"],
        ["sinfo", "-h", "-N"], ["scontrol", "delete", f"ReservationName={name[1]}"],
    ]  # fmt: skip
    assert "--nodelist=n[1,5-6] --nodes=3 " in made[5], "two idle partners by default"


def test_a_check_that_made_no_run_did_not_pass_anything(tmp_path: Path) -> None:
    result = recheck(tmp_path, "n1", code=0, makes_run="no")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "RESUMED" not in result.stdout
    assert "collbench: recheck: the check could not run (exit 0, no run directory); the nodes drained again" in (
        result.stderr
    )
    drained = [call for call in calls(tmp_path) if "State=DRAIN" in call]
    assert drained == [f"scontrol update NodeName=n1 State=DRAIN Reason={OURS}"], "drained again as it was"
    assert calls(tmp_path)[-1].startswith("scontrol delete ReservationName=collbench-recheck-")


def test_a_check_that_could_not_run_puts_every_node_back(tmp_path: Path) -> None:
    result = recheck(tmp_path, "n1", code=4)
    assert result.returncode == 4, result.stdout + result.stderr
    assert "the check could not run (exit 4); the nodes drained again as they were" in result.stderr
    assert [call for call in calls(tmp_path) if "State=DRAIN" in call] == [
        f"scontrol update NodeName=n1 State=DRAIN Reason={OURS}"
    ]


def test_a_refused_reservation_resumes_and_checks_nothing(tmp_path: Path) -> None:
    refuse = 'case "$*" in *reservation*) echo "scontrol: error: Invalid user id" >&2; exit 1;; esac'
    result = recheck(tmp_path, "n1", scontrol=refuse)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.strip() == (
        "collbench: recheck: the reservation was refused (scontrol: error: Invalid user id); nothing resumed"
    )
    assert [call.split()[0] for call in calls(tmp_path)] == ["sinfo", "sinfo", "scontrol"], "no salloc"


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    result = recheck(tmp_path, "n[1-", "--dry-run")
    assert result.returncode == 2
    assert result.stderr.startswith("collbench: error: recheck: 'n[1-' is not a hostlist (")
    assert result.stderr.strip().endswith("allowed: a Slurm hostlist or ALL")
    assert calls(tmp_path) == []
    missing = collbench("recheck", "n1", *CONFIG, "--dry-run", cwd=tmp_path, env=fake_commands(tmp_path / "none"))
    assert missing.returncode == 3, missing.stderr
    assert "Slurm is not installed here: sinfo not found on PATH" in missing.stderr


def test_an_inconclusive_check_hands_nothing_back_and_says_so(tmp_path: Path) -> None:
    """A re-check whose verdict is INCONCLUSIVE settles nothing: the node is drained again as it was, exit 5."""
    result = recheck(tmp_path, "n1", code=5)
    assert result.returncode == 5, result.stdout + result.stderr
    assert "RESUMED" not in result.stdout
    assert "the check could not settle the nodes (exit 5, INCONCLUSIVE" in result.stderr
    assert [call for call in calls(tmp_path) if "State=DRAIN" in call] == [
        f"scontrol update NodeName=n1 State=DRAIN Reason={OURS}"
    ]
