"""`collbench import`: nccl-tests' output made into a run directory (launcher imported) that report, compare,
history and the exports read like any run, labelled with what the files say; the same files imported again
are the same run; a damaged row leaves nothing behind. In-process, no Slurm."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.cli.main import main
from jobs.imports.read import files_digest
from jobs.rundir.layout import RunDir
from jobs.rundir.records.config import load_run_config
from jobs.rundir.records.run import ImportedAs, LauncherName
from tests.jobs.imports.collbench_json import collbench_json
from tests.jobs.rundir.synthetic import sweep_run

LOGS = Path(__file__).parents[1] / "imports" / "logs"


def _import(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, RunDir | None, str]:
    code = main(["import", *args, "--output-dir", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    made = list((tmp_path / "runs").iterdir()) if (tmp_path / "runs").is_dir() else []
    return code, RunDir(made[0]) if len(made) == 1 else None, err


def test_an_imported_run_reads_like_any_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, run, err = _import(tmp_path, capsys, str(LOGS / "v2.17-two-runs.log"))
    assert code == 0 and run is not None, err
    assert "3 line(s) that are not nccl-tests' skipped" in err
    meta = run.read_meta()
    assert meta.launcher is LauncherName.IMPORTED and meta.world_size == 2 and meta.nodes == 2
    assert meta.imported_from == [str(LOGS / "v2.17-two-runs.log")]
    assert sorted(p.name for p in run.nccl_tests_dir.iterdir()) == ["all_reduce.json", "reduce_scatter.json"]
    assert main(["report", str(run.path)]) == 0
    table = capsys.readouterr().out
    assert "# collbench all_reduce: 2 ranks, backend nccl" in table and "reduce_scatter" in table
    assert "keeps no NCCL log and no port snapshot" in table and "NCCL log not found" not in table
    assert "not in the results history yet: collbench history ingest" in err
    assert main(["report", str(run.path), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["passed"] and len(document["rows"]) == 12
    assert main(["report", str(run.path), "--format", "csv"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 13
    assert main(["report", str(run.path), "--format", "nccl-tests-json"]) == 0
    first = json.loads(capsys.readouterr().out.splitlines()[0])
    ar = first["results"][0]
    assert first["args"] == ["collbench", "import", str(LOGS / "v2.17-two-runs.log")]
    assert (ar["size"], ar["out_of_place"]["time"], ar["in_place"]["time"]) == (1024, 31.24, 30.24)
    assert [d["hostname"] for d in first["config"]["devices"]] == ["nodeA", "nodeB"]
    assert main(["report", str(run.path), "--plot", str(tmp_path / "busbw.png")]) == 0
    assert (tmp_path / "busbw.png").stat().st_size > 0
    assert main(["status", str(run.path)]) == 0
    assert "COMPLETED" in capsys.readouterr().out


def test_json_with_per_iteration_times_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, run, err = _import(tmp_path, capsys, str(LOGS / "v3-all_gather.json"))
    assert code == 0 and run is not None, err
    written = json.loads(run.nccl_tests_file("all_gather").read_text())
    original = json.loads((LOGS / "v3-all_gather.json").read_text())
    block = written["results"][0]["out_of_place_per_iter"]
    assert block["times_us"] == original["results"][0]["out_of_place_per_iter"]["times_us"]
    assert [d["device_hex"] for d in written["config"]["devices"]] == [
        d["device_hex"] for d in original["config"]["devices"]
    ]
    assert written["nccl_version"] == 22703 and "NCCL_IB_HCA=mlx5" in written["env"]


def test_a_log_cut_short_is_imported_as_an_incomplete_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, run, err = _import(tmp_path, capsys, str(LOGS / "v2.19-cut-short.log"))
    assert code == 1 and run is not None
    assert f"INCOMPLETE: {LOGS / 'v2.19-cut-short.log'}:16: the output ends mid-row" in err
    assert main(["report", str(run.path), "--format", "csv"]) == 1
    assert len(capsys.readouterr().out.splitlines()) == 6


def test_a_damaged_row_is_exit_2_in_one_line_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "runs").mkdir()
    code, run, err = _import(tmp_path, capsys, str(LOGS / "v2.17-two-runs.log"), str(LOGS / "v2.19-damaged-row.log"))
    assert code == 2 and run is None and list((tmp_path / "runs").iterdir()) == []
    assert err == f"collbench: error: {LOGS / 'v2.19-damaged-row.log'}:15: damaged row: algbw '0.0x2' is not a number\n"


def test_runs_of_different_rank_counts_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, run, err = _import(tmp_path, capsys, str(LOGS / "v2.17-two-runs.log"), str(LOGS / "v2.19-no-validation.log"))
    assert code == 2 and run is None and "import them separately" in err and err.count("\n") == 1


def test_compare_holds_nccl_tests_against_collbench(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, imported, _ = _import(tmp_path, capsys, str(LOGS / "v2.17-two-runs.log"))
    assert imported is not None
    native = sweep_run(tmp_path / "native")
    config = native.config_file.read_text().replace("backend: gloo", "backend: nccl")
    native.config_file.write_text(config.replace("device: cpu", "device: cuda"))  # as on nccl-tests' GPUs
    code = main(["compare", str(imported.path), str(native.path), "--tolerance", "5%"])
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.strip().startswith("all_reduce")]
    assert len(lines) == 2 and all("in-place" in line and line.endswith(" ok") for line in lines), out
    assert code == 0


def test_history_ingests_and_lists_an_imported_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    _, run, _ = _import(tmp_path, capsys, str(LOGS / "v2.13-broadcast.log"))
    assert run is not None
    assert main(["history", "ingest", str(tmp_path / "runs")]) == 0
    capsys.readouterr()
    assert main(["history", "list", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["run_id"], r["world_size"], r["outcome"]) for r in rows] == [(run.run_id, 2, "passed")]


def test_nothing_can_be_started_with_launcher_imported(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "launcher=imported", "ranks=2"]) == 2
    assert "nothing can be started with it" in capsys.readouterr().err


def test_collbench_json_of_a_gloo_run_is_imported_as_gloo_on_the_cpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, run, err = _import(tmp_path, capsys, str(collbench_json(tmp_path)))
    assert code == 0 and run is not None, err
    assert (
        "collbench: import: labelled gloo on cpu from device_info 'cpu' on every rank (NCCL runs on GPUs only); "
        "NCCL version unknown, CUDA version unknown, torch version unknown\n"
    ) in err
    assert run.read_meta().imported_as == ImportedAs(backend="gloo", device="cpu")
    cfg = load_run_config(run)
    assert (cfg.backend, cfg.device) == ("gloo", "cpu")
    assert main(["report", str(run.path), "--format", "nccl-tests-json"]) == 0
    again = json.loads(capsys.readouterr().out.splitlines()[0])
    assert {d["device_info"] for d in again["config"]["devices"]} == {"cpu"} and again["nccl_version"] is None


def test_what_the_files_do_not_say_is_unknown_in_run_json_and_the_config_keeps_nccl_on_cuda(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, run, err = _import(tmp_path, capsys, str(collbench_json(tmp_path, on_gpus=True)))
    assert code == 0 and run is not None, err
    assert run.read_meta().imported_as == ImportedAs(device="cuda", nccl_version="2.21.5")
    assert "labelled backend unknown on cuda from device_info" in err
    cfg = load_run_config(run)
    assert (cfg.backend, cfg.device) == ("nccl", "cuda")
    _, nccl_tests, _ = _import(tmp_path / "other", capsys, str(LOGS / "v2.17-two-runs.log"))
    assert nccl_tests is not None
    assert nccl_tests.read_meta().imported_as == ImportedAs(backend="nccl", device="cuda")


def test_the_same_files_imported_twice_are_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, two = str(LOGS / "v2.19-no-validation.log"), str(LOGS / "v2.19-each-rank-printed.log")
    assert main(["import", one, two, "--output-dir", str(tmp_path / "runs")]) == 0
    first = capsys.readouterr()
    code, run, err = _import(tmp_path, capsys, two, one)
    assert code == 0 and run is not None
    assert err.endswith(f"collbench: import: already imported as {run.run_id} ({run.path}); nothing written\n")
    assert "labelled" not in err and "not in the results history yet" not in err
    assert run.read_meta().imported_digest == files_digest([Path(one), Path(two)])
    assert main(["import", two, one, "--output-dir", str(tmp_path / "runs")]) == 0
    assert capsys.readouterr().out == first.out == f"imported 6 row(s) of all_reduce on 4 rank(s) into {run.path}\n"


def test_a_changed_file_or_another_op_is_a_new_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "all_reduce.log"
    log.write_bytes((LOGS / "v2.17-two-runs.log").read_bytes())
    assert _import(tmp_path, capsys, str(log))[0] == 0
    log.write_bytes(log.read_bytes().replace(b"31.24", b"41.24"))
    assert _import(tmp_path, capsys, str(log))[0] == 0
    assert len(list((tmp_path / "runs").iterdir())) == 2
    old = str(LOGS / "v2.10-all_gather.log")
    assert _import(tmp_path / "ops", capsys, old, "--op", "all_gather")[0] == 0
    assert _import(tmp_path / "ops", capsys, old, "--op", "all_to_all")[0] == 0
    assert _import(tmp_path / "ops", capsys, old, "--op", "all_gather")[0] == 0
    made = (tmp_path / "ops" / "runs").iterdir()  # run ids made in one second do not sort by when
    assert sorted(load_run_config(RunDir(path)).bench.ops for path in made) == [["all_gather"], ["all_to_all"]]


def test_a_log_cut_short_imported_again_is_found_and_still_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cut = str(LOGS / "v2.19-cut-short.log")
    assert _import(tmp_path, capsys, cut)[0] == 1
    code, run, err = _import(tmp_path, capsys, cut)
    assert code == 1 and run is not None and "nothing written" in err and "INCOMPLETE" in err
