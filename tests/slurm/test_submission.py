"""Building the Slurm request: the sbatch script (golden file) and what may never reach it."""

from pathlib import Path

import pytest

from jobs.cli.main import main
from jobs.config.model import load_config
from jobs.launchers.slurm import slurm_request
from slurm.submission import build_request

GOLDEN = Path(__file__).parent / "golden"
FOLDER = Path("/shared/collbench/runs/RUN/submitit")
PYTHON = "/opt/venv/bin/python"


def test_ib_h100_example_renders_the_golden_sbatch_script() -> None:
    cfg = load_config("ib-h100")
    script = slurm_request(cfg, FOLDER.parent, PYTHON).script()
    assert script == (GOLDEN / "ib-h100.sbatch").read_text()
    assert "#SBATCH --no-requeue" in script, "one attempt unless slurm.requeue=true"
    assert script.index("-m jobs.rundir.attempts /shared/collbench/runs/RUN") < script.index("module load cuda")


def test_requeue_is_asked_for_only_when_the_config_allows_it() -> None:
    cfg = load_config("ib-h100", ["slurm.requeue=true"])
    assert "#SBATCH --requeue\n" in slurm_request(cfg, FOLDER.parent, PYTHON).script()


def test_request_maps_the_slurm_section_onto_submitit() -> None:
    cfg = load_config("ib-h100", ["nodes=16", "slurm.qos=''", "slurm.kill_on_bad_exit=false"])
    params = build_request(cfg.slurm, cfg.nodes, 90.5, FOLDER, PYTHON).parameters
    assert params["nodes"] == 16
    assert params["ntasks_per_node"] == 8
    assert params["gpus_per_node"] == 8
    assert params["time"] == 91
    assert "qos" not in params
    assert params["srun_args"] == ["--cpu-bind=none"]
    assert params["additional_parameters"] == {"no-requeue": True, "reservation": "acceptance"}


def test_slurm_warns_a_short_job_a_tenth_of_its_limit_ahead_and_a_long_one_90_s() -> None:
    def warning(job_min: int) -> str:
        script = slurm_request(load_config("ib-h100", [f"timeouts.job_min={job_min}"]), FOLDER.parent, PYTHON).script()
        return next(line for line in script.splitlines() if line.startswith("#SBATCH --signal="))

    assert warning(1) == "#SBATCH --signal=USR2@6", "a 1-minute job is not warned while its ranks start"
    assert warning(10) == "#SBATCH --signal=USR2@60"
    assert warning(15) == warning(600) == "#SBATCH --signal=USR2@90", "submitit's own lead from 15 minutes on"


def test_tasks_per_node_defaults_to_one_per_gpu() -> None:
    cfg = load_config("slurm", ["slurm.gpus_per_node=4"])
    assert build_request(cfg.slurm, 2, 10, FOLDER, PYTHON).parameters["ntasks_per_node"] == 4
    assert cfg.world_size == 8


def test_kill_on_bad_exit_is_on_by_default() -> None:
    cfg = load_config("testcluster")
    assert build_request(cfg.slurm, 2, 10, FOLDER, PYTHON).parameters["srun_args"][0] == "--kill-on-bad-exit=1"


SMUGGLING = {
    "newline in partition": ('  partition: "debug\\n#SBATCH --qos=high"', "contains whitespace"),
    "second option in partition": ("  partition: debug --qos=high", "contains whitespace"),
    "newline in setup": ('  setup: ["module load x\\nrm -rf /tmp/x"]', "spans several lines"),
    "newline in an srun argument": ('  srun_args: ["--x\\n--y"]', "spans several lines"),
    "bad sbatch_extra key": ('  sbatch_extra: {"a b": "1"}', "is not an sbatch option name"),
    "space in sbatch_extra": ('  sbatch_extra: {reservation: "x --qos=high"}', "contains whitespace"),
}


@pytest.mark.parametrize("case", SMUGGLING, ids=str)
def test_no_value_can_smuggle_a_directive(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line, message = SMUGGLING[case]
    config = tmp_path / "evil.yaml"
    config.write_text(f"launcher: slurm\noutput_dir: {tmp_path / 'runs'}\nslurm:\n{line}\n")
    assert main(["submit", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "runs").exists()


def test_a_mistyped_slurm_key_lists_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "--config", "testcluster", "--dry-run", "slurm.partitoin=gpu"]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'slurm.partitoin'; valid keys under 'slurm': account, constraint, cpus_per_task" in err


def test_ranks_must_agree_with_nodes_times_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "--config", "testcluster", "--dry-run", "ranks=3"]) == 2
    assert "ranks: 3 does not match nodes x slurm.tasks_per_node = 4" in capsys.readouterr().err


def test_local_configs_cannot_be_submitted(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "--dry-run"]) == 2
    assert "launcher: 'local' cannot be submitted" in capsys.readouterr().err


def test_dry_run_prints_the_script_and_submits_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "--config", "testcluster", "--dry-run", f"output_dir={tmp_path}", "nodes=3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#!/bin/bash")
    assert "#SBATCH --nodes=3" in out and "--kill-on-bad-exit=1" in out
    assert list(tmp_path.iterdir()) == []
