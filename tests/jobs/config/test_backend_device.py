"""backend and device go together: the one set brings the other along where that was left to a lower layer
(the schema's default, or the file under an override); ranks: auto is one rank per visible GPU."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jobs.config.model import ConfigError, load_config
from tests.conftest import collbench


def _yaml(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("overrides", "backend", "device"),
    [
        (["device=cuda"], "nccl", "cuda"),
        (["backend=nccl"], "nccl", "cuda"),
        (["device=cpu"], "gloo", "cpu"),
        (["device=cuda", "backend=nccl"], "nccl", "cuda"),
    ],
)
def test_one_of_the_pair_set_brings_the_other(overrides: list[str], backend: str, device: str) -> None:
    cfg = load_config(None, overrides)  # local.yaml sets backend: gloo and device: cpu, the overrides win
    assert (cfg.backend, cfg.device) == (backend, device)


def test_a_file_that_sets_one_gets_the_other_and_an_override_of_it_brings_its_own(tmp_path: Path) -> None:
    only_backend = _yaml(tmp_path, "backend: nccl\n")
    assert (load_config(only_backend).backend, load_config(only_backend).device) == ("nccl", "cuda")
    assert load_config(only_backend, ["device=cpu"]).backend == "gloo"


@pytest.mark.parametrize("where", ["overrides", "file"])
def test_both_set_apart_in_one_place_is_refused_naming_both(where: str, tmp_path: Path) -> None:
    overrides, config = (["backend=nccl", "device=cpu"], None) if where == "overrides" else ([], "")
    if where == "file":
        config = _yaml(tmp_path, "backend: nccl\ndevice: cpu\n")
    with pytest.raises(ConfigError, match="device 'cpu' cannot be used with backend 'nccl'; nccl runs on cuda"):
        load_config(config, overrides)


def test_ranks_auto_counts_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,3")
    assert load_config("local-gpu").world_size == 3
    assert load_config("local-gpu", ["env.CUDA_VISIBLE_DEVICES='5'"]).world_size == 1  # the config's own wins
    assert load_config("local-gpu", ["ranks=2"]).world_size == 2


def test_ranks_auto_with_no_gpu_visible_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(ConfigError, match=r"^ranks: auto found no GPU visible here \(CUDA_VISIBLE_DEVICES=''\)"):
        load_config("local-gpu")


def test_ranks_auto_unset_counts_the_nvidia_device_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    files = [path for path in Path("/dev").glob("nvidia*") if re.fullmatch(r"nvidia\d+", path.name)]
    if files:
        assert load_config("local-gpu").world_size == len(files)
    else:
        with pytest.raises(ConfigError, match=r"0 /dev/nvidiaN device file\(s\), CUDA_VISIBLE_DEVICES unset"):
            load_config("local-gpu")


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (["device=cpu"], "ranks: auto is one rank per visible GPU and needs device=cuda; got cpu: set ranks=N"),
        (["launcher=slurm"], "ranks: auto counts this machine's GPUs, for launcher=local; under launcher=slurm"),
    ],
)
def test_ranks_auto_elsewhere_is_refused(overrides: list[str], says: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    with pytest.raises(ConfigError, match=re.escape(says)):
        load_config("local-gpu", overrides)


def test_the_gpu_config_s_dry_run_prints_it_on_a_cpu_machine(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "0,1"}
    result = collbench("run", "--config", "local-gpu", "--dry-run", "-e", "64M", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    for line in ("launcher: local", "ranks: 2", "backend: nccl", "device: cuda", "  max_bytes: 67108864"):
        assert f"{line}\n" in result.stdout
    assert list(tmp_path.iterdir()) == []
