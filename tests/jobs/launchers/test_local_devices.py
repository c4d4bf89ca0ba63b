"""The local launcher hands its ranks the GPUs this process was given, never submitit's 0..N-1."""

from pathlib import Path

import pytest

from jobs.config.model import ConfigError, load_config
from jobs.launchers.local import LocalLauncher, with_given_devices

CUDA = ["backend=nccl", "device=cuda", "bench.dtype=float32"]


def test_an_inherited_list_gives_its_first_n_to_the_ranks() -> None:
    cfg = with_given_devices(load_config(None, ["ranks=2", *CUDA]), {"CUDA_VISIBLE_DEVICES": "5,7,GPU-x"})
    assert cfg.env["CUDA_VISIBLE_DEVICES"] == "5,7"


def test_mig_and_uuid_entries_pass_as_they_are() -> None:
    given = "MIG-4b1c,MIG-9d2e"
    cfg = with_given_devices(load_config(None, ["ranks=2", *CUDA]), {"CUDA_VISIBLE_DEVICES": given})
    assert cfg.env["CUDA_VISIBLE_DEVICES"] == given


def test_fewer_inherited_gpus_than_ranks_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError) as refused:
        with_given_devices(load_config(None, ["ranks=4", *CUDA]), {"CUDA_VISIBLE_DEVICES": "2,3"})
    assert str(refused.value) == (
        "CUDA_VISIBLE_DEVICES: '2,3' gives this run 2 GPU(s), fewer than its 4 ranks with device=cuda; "
        "allowed: ranks <= 2, or a list with a GPU per rank"
    )


def test_the_configs_own_list_is_held_to_the_same_count() -> None:
    cfg = load_config(None, ["ranks=2", *CUDA, "env.CUDA_VISIBLE_DEVICES=4"])
    with pytest.raises(ConfigError, match=r"^env\.CUDA_VISIBLE_DEVICES: '4' gives this run 1 GPU"):
        with_given_devices(cfg, {"CUDA_VISIBLE_DEVICES": "0,1,2,3"})


def test_unset_leaves_the_config_alone_and_a_cpu_run_keeps_the_whole_list() -> None:
    cfg = load_config(None, ["ranks=2"])
    assert with_given_devices(cfg, {}) is cfg
    assert with_given_devices(cfg, {"CUDA_VISIBLE_DEVICES": "3"}).env["CUDA_VISIBLE_DEVICES"] == "3"


def test_the_request_says_which_gpus_and_refuses_before_anything_is_made(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "6,2")
    request = LocalLauncher().request(load_config(None, ["ranks=2", *CUDA, f"output_dir={tmp_path}"]))
    assert "(env CUDA_VISIBLE_DEVICES=6,2)" in request.text
    with pytest.raises(ConfigError, match="fewer than its 3 ranks"):
        LocalLauncher().request(load_config(None, ["ranks=3", *CUDA, f"output_dir={tmp_path}"]))
