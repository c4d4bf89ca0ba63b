"""Config loading, overrides and every bad-input case: a one-line error, exit 2, nothing created."""

from pathlib import Path

import pytest

from jobs.cli.main import main
from jobs.config.model import available_configs, load_config


def test_embedded_default_is_two_local_gloo_ranks_with_all_seed_ops() -> None:
    cfg = load_config()
    assert (cfg.launcher, cfg.world_size, cfg.backend, cfg.device) == ("local", 2, "gloo", "cpu")
    assert cfg.bench.ops == ["all_reduce", "all_gather", "reduce_scatter"]
    assert cfg.bench.max_bytes == 4 * 1024 * 1024


def test_overrides_follow_hydra_grammar_for_plain_keys() -> None:
    cfg = load_config(None, ["ranks=4", "bench.ops=[all_reduce]", "bench.max_bytes=64M", "bench.check=false"])
    assert cfg.world_size == 4
    assert cfg.bench.ops == ["all_reduce"]
    assert cfg.bench.max_bytes == 64 * 1024**2
    assert cfg.bench.check is False


def test_step_bytes_and_explicit_sizes_replace_the_factor() -> None:
    assert load_config(None, ["bench.min_bytes=1K", "bench.max_bytes=4K", "bench.step_bytes=1K"]).bench.size_list() == [
        1024,
        2048,
        3072,
        4096,
    ]
    cfg = load_config(None, ["bench.sizes=[3000,1K,1M]", "bench.step_factor=1"])
    assert cfg.bench.size_list() == [3000, 1024, 1024**2]


def test_root_all_runs_every_root_in_turn() -> None:
    cfg = load_config(None, ["ranks=3", "bench.root=all"])
    assert cfg.bench.roots(3) == [0, 1, 2]
    assert load_config(None, ["bench.root=1"]).bench.roots(2) == [1]


def test_config_by_name_and_by_path(tmp_path: Path) -> None:
    assert "local" in available_configs()
    path = tmp_path / "mine.yaml"
    path.write_text("ranks: 3\nbench:\n  dtype: int32\n")
    cfg = load_config(str(path))
    assert (cfg.world_size, cfg.bench.dtype, cfg.bench.ops[0]) == (3, "int32", "all_reduce")


def test_dry_run_prints_the_resolved_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--dry-run", f"output_dir={tmp_path}", "ranks=3", "bench.max_bytes=1M"]) == 0
    out = capsys.readouterr().out
    assert "ranks: 3" in out and "max_bytes: 1048576" in out and "reduce_op: sum" in out
    assert list(tmp_path.iterdir()) == []


NCCL = ["backend=nccl", "device=cuda"]

BAD_OVERRIDES = {
    "unknown key": (
        ["bench.opz=[all_reduce]"],
        "unknown key 'bench.opz'; valid keys under 'bench': average, check, cuda_graph_launches, dtype",
    ),
    "unknown top key": (["rnks=2"], "unknown key 'rnks'; valid keys: backend"),
    "wrong type": (["ranks=two"], "ranks: expected an integer, got 'two'"),
    "wrong bool": (["bench.check=maybe"], "bench.check: expected true or false, got 'maybe'"),
    "unknown op": (["bench.ops=[all_reduse]"], "bench.ops[0]: 'all_reduse' is not allowed; choose one of all_reduce"),
    "unknown dtype": (["bench.dtype=float33"], "bench.dtype: 'float33' is not allowed; choose one of int8"),
    "unknown reduce op": (["bench.reduce_op=mean"], "bench.reduce_op: 'mean' is not allowed; choose one of sum, prod"),
    "unknown backend": (["backend=mpi"], "backend: 'mpi' is not allowed; choose one of gloo, nccl"),
    "min > max": (["bench.min_bytes=8M", "bench.max_bytes=1M"], "bench.min_bytes: 8388608 is larger than"),
    "zero size": (["bench.min_bytes=0"], "bench.min_bytes: 0 must be a positive size"),
    "negative size": (["bench.max_bytes=-4"], "bench.max_bytes: -4 must be a positive size"),
    "bad size": (["bench.max_bytes=4Q"], "bench.max_bytes: '4Q' is not a size"),
    "step factor": (["bench.step_factor=1"], "bench.step_factor: 1 must be > 1"),
    "ranks < 1": (["ranks=0"], "ranks: 0 must be >= 1"),
    "dtype the backend cannot reduce": (
        ["bench.dtype=int32", "bench.reduce_op=avg"],
        "reduce op 'avg' on dtype 'int32' is not supported by gloo; gloo runs avg on float16",
    ),
    # each alone brings the other along (tests/jobs/config/test_backend_device.py); both set apart are refused
    "device the backend cannot use": (
        ["device=cuda", "backend=gloo"],
        "device 'cuda' cannot be used with backend 'gloo'",
    ),
    "nccl on cpu": (
        ["backend=nccl", "device=cpu"],
        "device 'cpu' cannot be used with backend 'nccl'; nccl runs on cuda",
    ),
    "not key=value": (["ranks"], "override 'ranks' is not KEY=VALUE"),
    "fault rank outside the world": (["faults.fail_rank=5"], "faults.fail_rank: 5 is not a rank of this run"),
    "root outside the world": (["bench.root=2"], "bench.root: 2 is not a rank of this run; allowed: 0-1 or all"),
    "root neither rank nor all": (
        ["bench.root=every"],
        "bench.root: 'every' is not allowed; expected an integer or one of all",
    ),
    "negative step": (["bench.step_bytes=-1"], "bench.step_bytes: -1 must be 0"),
    "bad size in list": (["bench.sizes=[1K,huge]"], "bench.sizes: 'huge' is not a size"),
    "zero size in list": (["bench.sizes=[1K,0]"], "bench.sizes[1]: 0 must be a positive size"),
    "budget below zero": (["bench.time_budget_ms=-5"], "bench.time_budget_ms: -5 must be 0"),
    "iteration cap below floor": (["bench.min_iters=10", "bench.max_iters=5"], "bench.max_iters: 5 is smaller"),
    "graphs on cpu": (["bench.cuda_graph_launches=2"], "bench.cuda_graph_launches: 2 needs device=cuda"),
    "unknown timer": (
        ["bench.timer=events"],
        "bench.timer: 'events' is not allowed; choose one of auto, loop, per_call",
    ),
    "unknown average": (
        ["bench.average=median"],
        "bench.average: 'median' is not allowed; choose one of mean, min, max, rank0",
    ),
    "unknown network requirement": (
        ["fabric.require_network=roce"],
        "fabric.require_network: 'roce' is not allowed; choose one of any, ib, socket",
    ),
    "fabric requirement on gloo": (["fabric.require_gdr=true"], "fabric.require_gdr: True needs backend=nccl"),
    "fabric requirement without nccl_info": (
        [*NCCL, "fabric.require_network=ib"],
        "fabric.require_network: ib needs fabric.nccl_info=true",
    ),
    "nccl_info hidden by NCCL_DEBUG": (
        [*NCCL, "fabric.nccl_info=true", "env.NCCL_DEBUG=WARN"],
        "env.NCCL_DEBUG: 'WARN' hides what fabric.nccl_info reads; allowed with it: INFO, TRACE",
    ),
    "nccl_info without its subsystems": (
        [*NCCL, "fabric.nccl_info=true", "env.NCCL_DEBUG_SUBSYS=COLL"],
        "env.NCCL_DEBUG_SUBSYS: 'COLL' leaves out what fabric.nccl_info reads",
    ),
    "port errors below -1": (["fabric.max_port_errors=-2"], "fabric.max_port_errors: -2 must be -1"),
    "sendrecv on one gloo rank": (["ranks=1", "bench.ops=[sendrecv]"], "sendrecv on backend gloo needs at least 2"),
    "too big for this host": (["bench.max_bytes=64G", "bench.min_bytes=64G"], "needs"),
}


@pytest.mark.parametrize("case", BAD_OVERRIDES, ids=str)
def test_bad_input_is_one_line_exit_2_and_nothing_created(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    overrides, message = BAD_OVERRIDES[case]
    out_dir = tmp_path / "runs"
    assert main(["run", f"output_dir={out_dir}", *overrides]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("collbench: error: ")
    assert message in err
    assert not out_dir.exists()


def test_missing_config_file_lists_the_known_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--config", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err
    assert "is neither a YAML file nor a config name; names: " in err and "local" in err


def test_invalid_yaml_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("ranks: [2\nbench: {\n")
    assert main(["run", "--config", str(path), f"output_dir={tmp_path / 'runs'}"]) == 2
    err = capsys.readouterr().err
    assert "is not valid YAML" in err and err.count("\n") == 1
    assert not (tmp_path / "runs").exists()


def test_yaml_that_is_a_list_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- ranks\n")
    assert main(["run", "--config", str(path)]) == 2
    assert "must hold a mapping of keys" in capsys.readouterr().err
