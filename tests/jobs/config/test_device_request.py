"""device=cuda under Slurm asks for one GPU per rank, refused in one line before anything is submitted."""

from pathlib import Path

import pytest

from jobs.cli.main import main
from jobs.config.model import ConfigError, load_config


def test_a_job_on_gpus_that_asks_slurm_for_none_is_refused_before_submit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "runs"
    assert main(["submit", "--config", "slurm", f"output_dir={out_dir}", "slurm.gpus_per_node=0", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "slurm.gpus_per_node: 0 asks Slurm for no GPU" in err
    assert not out_dir.exists()


def test_more_ranks_per_node_than_gpus_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^slurm.tasks_per_node: 16 ranks per node, but slurm.gpus_per_node asks"):
        load_config("ib-h100", ["slurm.tasks_per_node=16"])


def test_what_the_shipped_configs_ask_for_passes_and_a_step_inherits_its_allocations_gpus() -> None:
    for name in ("slurm", "ib-h100"):
        assert load_config(name).device == "cuda"
    assert load_config("slurm", ["launcher=slurm-step", "slurm.gpus_per_node=0"]).slurm.gpus_per_node == 0
    assert load_config("slurm", ["slurm.gpus_per_node=0", "slurm.sbatch_extra.gpus_per_task=1"]).device == "cuda"
