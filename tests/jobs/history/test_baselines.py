"""What a baseline takes, on SQLite and PostgreSQL (the history_url fixture): only runs comparable to the one
held (the same cluster, config fingerprint, node count and world size) and only healthy ones (passed, nothing
recorded in `runs.excluded`); `history show` and --against-history name the runs it left out and why; `trend`
draws one series per comparable set; the views never answer with silence."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import update

from jobs.cli.main import main
from jobs.history import schema
from jobs.history.database import History, open_history
from jobs.history.gather import gather
from jobs.history.ingest import write_record
from jobs.history.queries import (
    LEFT_OUT_SHOWN,
    Comparable,
    Filters,
    SeriesKey,
    left_out,
    list_runs,
    pair_level,
    past_figures,
    recorded_run,
    series,
    trend,
)
from jobs.rundir.layout import RunDir
from tests.conftest import REPO
from tests.jobs.rundir import synthetic

NIGHT = 86400.0
FIRST = 1e9
SIZE = synthetic.SIZES[-1]
FAULT = "injected fault faults.slow_rank=1"


def _record(
    history: History, where: Path, night: int, *, ranks: int = 2, slower: float = 1.0, **columns: object
) -> RunDir:
    """A finished synthetic run recorded as started on `night`, with `columns` of its runs row set by hand
    (nodes, cluster, outcome, excluded: what gather would find in a real run of that kind)."""
    run = synthetic.sweep_run(where / "runs", ranks=ranks, slower=slower)
    record = gather(run)
    record.run.update({"started": FIRST + night * NIGHT, "excluded": "", **columns})
    assert write_record(history, record).recorded
    return run


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, list[str]]:
    """The command's exit code, stdout and stderr's lines (less the one saying a test's history was made)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, [line for line in err.splitlines() if "new history at" not in line]


def _mixed(history: History, where: Path) -> dict[str, RunDir]:
    """Four healthy 2-rank runs, then what must not weigh in their baseline, then the run held against them."""
    runs = {f"healthy{i}": _record(history, where, i) for i in range(4)}
    runs["three ranks"] = _record(history, where, 4, ranks=3)
    runs["two nodes"] = _record(history, where, 5, nodes=2)
    runs["elsewhere"] = _record(history, where, 6, cluster="prod")
    runs["faulted"] = _record(history, where, 7, slower=3.0, excluded=FAULT)
    runs["failed"] = _record(history, where, 8, slower=5.0, outcome="failed")
    runs["held"] = _record(history, where, 9)
    return runs


def test_a_baseline_takes_only_comparable_healthy_runs_and_names_those_it_left_out(
    history_url: str, tmp_path: Path
) -> None:
    with open_history(history_url) as history:
        runs = _mixed(history, tmp_path)
        held = recorded_run(history, runs["held"].run_id)
        assert held is not None and (held.world_size, held.excluded) == (2, "")
        like = held.comparable()
        assert like == Comparable(SeriesKey("local", held.config, 1, 2), FIRST + 9 * NIGHT, held.run_id)
        healthy = [runs[f"healthy{i}"].run_id for i in range(4)]
        assert {key: [run for run, _ in past] for key, past in past_figures(history, like).items()} == {
            ("all_reduce", size): healthy for size in synthetic.SIZES
        }
        skipped = left_out(history, like)
        assert skipped.total == 2 and [(r.run_id, r.why) for r in skipped.runs] == [
            (runs["failed"].run_id, "outcome failed"),  # a failed run recorded with no reason still says why
            (runs["faulted"].run_id, FAULT),
        ]

        points = trend(history, "all_reduce", SIZE, Filters())
        drawn = series(points)
        assert [(s.key.cluster, s.key.nodes, s.key.world_size, len(s.points)) for s in drawn] == [
            ("local", 1, 2, 7), ("local", 1, 3, 1), ("local", 2, 2, 1), ("prod", 1, 2, 1),
        ]  # fmt: skip
        base = drawn[0].baseline
        assert base is not None and base.runs == [*healthy, runs["held"].run_id]
        assert [s.baseline for s in drawn[1:]] == [None] * 3, "one run of a set is too little history"


def test_left_out_counts_only_the_runs_within_the_baselines_reach(history_url: str, tmp_path: Path) -> None:
    with open_history(history_url) as history:
        old = _record(history, tmp_path, 0, excluded=FAULT)
        for night in range(1, 4):
            _record(history, tmp_path, night)
        recent = _record(history, tmp_path, 4, excluded="slow host vm")
        held = recorded_run(history, _record(history, tmp_path, 5).run_id)
        assert held is not None
        assert left_out(history, held.comparable(), k=3).runs[0].run_id == recent.run_id
        assert left_out(history, held.comparable(), k=3).total == 1, "the baseline never reached back to it"
        assert left_out(history, held.comparable()).total == 2, "it took every healthy run: all before it count"
        assert old.run_id in [r.run_id for r in left_out(history, held.comparable()).runs]


def test_a_pair_level_leaves_out_what_is_not_healthy(history_url: str, tmp_path: Path) -> None:
    with open_history(history_url) as history:
        for night, slower in enumerate((1.0, 1.2)):
            _record(history, tmp_path, night, nodes=2, slower=slower)
        _record(history, tmp_path, 2, nodes=2, slower=0.5, excluded="2 wrong element(s) on vm (rank(s) 1)")
        assert pair_level(history, "local", "all_reduce", [SIZE]) is None, "two healthy pairs are too few"
        _record(history, tmp_path, 3, nodes=2, slower=0.9)
        found = pair_level(history, "local", "all_reduce", [SIZE])
        assert found is not None and len(found[1].runs) == 3


def test_show_says_the_run_is_left_out_and_which_runs_its_baseline_skipped(
    history_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_history(history_url) as history:
        runs = _mixed(history, tmp_path)
    code, out, err = _run(capsys, "history", "show", runs["held"].run_id, "--db", history_url)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"# {runs['held'].run_id} against the history") and "1 node(s), 2 rank(s)" in lines[0]
    at = lines.index("# left out of the baseline: 2 comparable run(s) before it that are not healthy")
    assert lines[at + 1].startswith(f"#   {runs['failed'].run_id} (") and lines[at + 1].endswith("): outcome failed")
    assert lines[at + 2].startswith(f"#   {runs['faulted'].run_id} (") and lines[at + 2].endswith(f"): {FAULT}")
    assert f"# judged against 4 run(s): {', '.join(runs[f'healthy{i}'].run_id for i in range(4))}" in out

    code, out, _ = _run(capsys, "history", "show", runs["faulted"].run_id, "--db", history_url)
    assert code == 0 and out.splitlines()[0] == f"# this run is left out of every baseline: {FAULT}"
    code, out, _ = _run(capsys, "history", "show", runs["held"].run_id, "--db", history_url, "--format", "json")
    shown = json.loads(out)
    assert (shown["world_size"], shown["excluded"], shown["left_out_total"]) == (2, "", 2)
    assert [(r["run_id"], r["why"]) for r in shown["left_out"]] == [
        (runs["failed"].run_id, "outcome failed"), (runs["faulted"].run_id, FAULT),
    ]  # fmt: skip
    code, out, err = _run(capsys, "history", "show", runs["faulted"].run_id, "--db", history_url, "--format", "csv")
    assert code == 0 and err[0] == f"collbench: history: this run is left out of every baseline: {FAULT}"


def test_against_history_on_a_run_directory_says_the_same(
    history_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_history(history_url) as history:
        runs = _mixed(history, tmp_path)
    faulted = runs["faulted"]
    code, _, err = _run(capsys, "report", str(faulted.path), "--against-history", "--db", history_url,
                        "--format", "json")  # fmt: skip
    said = [line for line in err if line.startswith("collbench: history: ")]
    assert said[0] == f"collbench: history: this run is left out of every baseline: {FAULT}"
    assert "collbench: history: left out of the baseline: 1 comparable run(s) before it that are not healthy" in err
    code, _, err = _run(capsys, "report", str(runs["held"].path), "--against-history", "--db", history_url,
                        "--format", "json")  # fmt: skip
    assert code == 0, err
    assert "collbench: history: left out of the baseline: 2 comparable run(s) before it that are not healthy" in err
    assert f"collbench: history:   {runs['faulted'].run_id} (" in "\n".join(err)
    code, out, err = _run(capsys, "report", str(runs["held"].path), "--against-history", "--db", history_url)
    assert "# left out of the baseline: 2 comparable run(s) before it that are not healthy" in out
    assert not [line for line in err if "left out" in line], "the table said it: stderr does not repeat it"


def test_at_most_ten_left_out_runs_are_named_then_how_many_more(
    history_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_history(history_url) as history:
        for night in range(LEFT_OUT_SHOWN + 2):
            _record(history, tmp_path, night, excluded=f"slow host n{night}")
        held = _record(history, tmp_path, 20)
    code, out, _ = _run(capsys, "history", "show", held.run_id, "--db", history_url)
    lines = out.splitlines()
    named = lines[lines.index(f"# left out of the baseline: {LEFT_OUT_SHOWN + 2} comparable run(s) before it that are "
                              "not healthy") + 1 :]  # fmt: skip
    named = [line for line in named if line.startswith("#   ")]
    assert code == 0 and len(named) == LEFT_OUT_SHOWN + 1 and named[-1] == "#   and 2 more"
    assert named[0].endswith(f": slow host n{LEFT_OUT_SHOWN + 1}"), "the newest first"
    shown = json.loads(_run(capsys, "history", "show", held.run_id, "--db", history_url, "--format", "json")[1])
    assert shown["left_out_total"] == LEFT_OUT_SHOWN + 2 and len(shown["left_out"]) == LEFT_OUT_SHOWN


def test_trend_with_no_filters_draws_a_series_per_comparable_set(
    history_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_history(history_url) as history:
        runs = _mixed(history, tmp_path)
        config = list_runs(history, Filters())[0].config
    code, out, err = _run(capsys, "history", "trend", "--op", "all_reduce", "--size", str(SIZE), "--db", history_url)
    assert code == 0 and not err
    headers = [line for line in out.splitlines() if line.startswith("# cluster")]
    assert headers == [
        f"# cluster local, config {config}, 1 node(s), 2 rank(s): 7 run(s)",
        f"# cluster local, config {config}, 1 node(s), 3 rank(s): 1 run(s)",
        f"# cluster local, config {config}, 2 node(s), 2 rank(s): 1 run(s)",
        f"# cluster prod, config {config}, 1 node(s), 2 rank(s): 1 run(s)",
    ]
    baselines = [line for line in out.splitlines() if line.startswith("# baseline")]
    assert len(baselines) == 4 and "over the last 5 healthy runs" in baselines[0]
    assert all("too little history" in line for line in baselines[1:])
    faulted = next(line for line in out.splitlines() if line.startswith(runs["faulted"].run_id))
    assert faulted.endswith(FAULT)

    code, out, _ = _run(capsys, "history", "trend", "--op", "all_reduce", "--size", str(SIZE), "--db", history_url,
                        "--format", "json")  # fmt: skip
    plain = json.loads(out)
    assert plain["baseline"] is None and len(plain["rows"]) == 10 and len(plain["series"]) == 4
    first = plain["series"][0]
    assert first["key"] == {"cluster": "local", "config": config, "nodes": 1, "world_size": 2}
    assert len(first["rows"]) == 7 and first["baseline"]["runs"][-1] == runs["held"].run_id
    code, out, _ = _run(capsys, "history", "trend", "--op", "all_reduce", "--size", str(SIZE), "--db", history_url,
                        "--format", "json", "--world-size", "2", "--nodes", "1", "--cluster", "local")  # fmt: skip
    plain = json.loads(out)
    assert len(plain["series"]) == 1 and plain["baseline"] == plain["series"][0]["baseline"] is not None
    listed = json.loads(
        _run(capsys, "history", "list", "--db", history_url, "--world-size", "3", "--format", "json")[1]
    )
    assert [row["run_id"] for row in listed["rows"]] == [runs["three ranks"].run_id]


def test_the_views_never_answer_with_silence(
    history_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_history(history_url) as history:
        _mixed(history, tmp_path)
    db = ("--db", history_url)
    code, out, err = _run(capsys, "history", "list", "--op", "allreduce", *db)
    assert code == 2 and len(err) == 1 and out == ""
    assert err[0].startswith("collbench: error: --op 'allreduce' is not a collective (did you mean all_reduce?)")
    assert "allowed: all_reduce, " in err[0] and "broadcast" in err[0]
    assert _run(capsys, "history", "trend", "--op", "allreduce", "--size", "1K", *db)[0] == 2

    code, out, err = _run(capsys, "history", "list", "--cluster", "nowhere", *db)
    assert (code, out) == (0, "")
    assert err == ["collbench: history: the history has never seen a cluster 'nowhere'; the clusters it knows: "
                   "local, prod"]  # fmt: skip
    code, out, err = _run(capsys, "history", "list", "--op", "broadcast", "--format", "json", *db)
    assert code == 0 and json.loads(out)["rows"] == []
    assert err == ["collbench: history: the history has never seen the op 'broadcast'; the ops it knows: all_reduce"]
    code, out, err = _run(capsys, "history", "list", "--nodes", "7", "--outcome", "failed", *db)
    assert (code, out, err) == (0, "", ["collbench: history: no run matches --nodes 7 --outcome failed"])
    code, out, err = _run(capsys, "history", "trend", "--op", "broadcast", "--size", "1K", *db)
    assert code == 0 and "never seen the op 'broadcast'" in err[0] and "too little history" not in out
    code, out, err = _run(capsys, "history", "trend", "--op", "all_reduce", "--size", "1M", *db)
    assert (code, out) == (0, ""), "nothing on stdout, not even a blank line"
    assert err == ["collbench: history: the history holds no all_reduce at 1048576 B; its sizes of all_reduce: "
                   f"{', '.join(map(str, synthetic.SIZES))}"]  # fmt: skip
    code, out, err = _run(capsys, "history", "trend", "--op", "all_reduce", "--size", "1K", "--nodes", "9", *db)
    assert code == 0 and err == ["collbench: history: no run matches --nodes 9 --op all_reduce --size 1024"]
    code, out, err = _run(capsys, "history", "trend", "--op", "all_reduce", "--size", "1K", "--fingerprint", "zz",
                          "--format", "csv", *db)  # fmt: skip
    assert code == 0 and out == "" and "never seen a config fingerprint 'zz'" in err[0]

    code, out, err = _run(capsys, "history", "node", "n99", *db)
    assert code == 0 and err == ["collbench: history: the history has never seen a host 'n99'; the hosts it knows: vm"]
    code, out, err = _run(capsys, "history", "node", "vm", "--format", "csv", *db)
    assert (code, out, err) == (0, "", ["collbench: history: no verdict in the history names vm"])
    code, out, err = _run(capsys, "history", "switch", "s9", *db)
    assert code == 0 and err == ["collbench: history: the history has never seen a switch or switch link 's9'; "
                                 "it holds none yet"]  # fmt: skip
    code, out, err = _run(capsys, "history", "export", "--cluster", "nowhere", *db)
    assert code == 0 and json.loads(out)["runs"] == [] and "never seen a cluster 'nowhere'" in err[0]
    code, out, err = _run(capsys, "history", "prune", "--keep-last", "0", "--nodes", "7", "--dry-run", *db)
    assert code == 0 and err == ["collbench: history: no run matches --nodes 7"]
    assert "would remove 0 run(s)" in out


def test_a_history_holding_nothing_says_so(history_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    open_history(history_url).close()
    code, out, err = _run(capsys, "history", "list", "--db", history_url)
    assert (code, out) == (0, "") and err == [f"collbench: history: no run in {_where(history_url)}"]
    code, _, err = _run(capsys, "history", "list", "--db", history_url, "--op", "all_reduce")
    assert err == ["collbench: history: the history has never seen the op 'all_reduce'; it holds none yet"]


def _where(history_url: str) -> str:
    with open_history(history_url) as history:
        return history.where


def test_trend_plot_without_matplotlib_is_a_one_line_refusal(history_url: str, tmp_path: Path) -> None:
    with open_history(history_url) as history:
        _record(history, tmp_path, 0)
    shadow = tmp_path / "no-matplotlib"
    shadow.mkdir()
    (shadow / "matplotlib.py").write_text("raise ImportError('matplotlib is not installed here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shadow), str(REPO)])}
    plot = tmp_path / "trend.png"
    done = subprocess.run(
        [sys.executable, "-m", "jobs.cli", "history", "trend", "--op", "all_reduce", "--size", "1K", "--db",
         history_url, "--plot", str(plot)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.splitlines() == ["collbench: error: --plot needs matplotlib: pip install matplotlib"]
    assert not plot.exists()


def test_trend_plot_draws_a_line_and_a_band_per_set(
    history_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_history(history_url) as history:
        _mixed(history, tmp_path)
    plot = tmp_path / "trend.png"
    code, _, err = _run(capsys, "history", "trend", "--op", "all_reduce", "--size", str(SIZE), "--db", history_url,
                        "--plot", str(plot))  # fmt: skip
    assert code == 0 and err == [f"collbench: plot written to {plot}"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tiny_figures_are_printed_with_digits_enough_to_differ(
    history_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """busbw 0.000123 against a median of 0.000134: an 8% drop, a regression, and two different numbers."""
    with open_history(history_url) as history:
        runs = [_record(history, tmp_path, night) for night in range(4)]
        recorded = [recorded_run(history, run.run_id) for run in runs]
        with history.engine.begin() as connection:
            for found, busbw in zip(recorded, (0.000134, 0.000135, 0.000133, 0.000123), strict=True):
                assert found is not None
                connection.execute(update(schema.results).where(schema.results.c.run == found.key).values(busbw=busbw))
    out = _run(capsys, "history", "show", runs[-1].run_id, "--db", history_url)[1]
    (row,) = [line.split() for line in out.splitlines() if line.split()[:2] == ["all_reduce", str(SIZE)]]
    assert row[-1] == "REGRESSION" and (row[2], row[3]) == ("0.000123", "0.000134")
    out = _run(capsys, "history", "trend", "--op", "all_reduce", "--size", str(SIZE), "--db", history_url)[1]
    assert "0.000123" in out and "0.000135" in out
    assert re.search(r"# baseline: busbw median 0\.0001\d\d, MAD 0\.00000\d over the last 4 healthy runs", out)


def test_a_faulted_run_as_gather_records_it_is_its_own_set_and_says_so_unrecorded(
    history_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No hand-set reason: gather puts the injected fault in `excluded` and in the fingerprint, and a run
    directory held before it is recorded says the same."""
    from jobs.config.model import load_config, to_yaml
    from jobs.history.ingest import record_run

    with open_history(history_url) as history:
        for night in range(3):
            _record(history, tmp_path, night)
    faulted = synthetic.sweep_run(tmp_path / "faulted", slower=3.0)
    words = ["ranks=2", "bench.ops=[all_reduce]", "bench.min_bytes=1K", "bench.max_bytes=4K", "faults.slow_rank=1"]
    faulted.config_file.write_text(to_yaml(load_config(None, [*words, "faults.slow_ms=5"])))
    code, _, err = _run(capsys, "report", str(faulted.path), "--against-history", "--db", history_url,
                        "--format", "json")  # fmt: skip
    why = "collbench: history: this run is left out of every baseline: injected fault faults.slow_rank=1"
    assert next(line for line in err if line.startswith("collbench: history: ")).startswith(why), err
    assert code == 0 and "too little history to judge any row" in "\n".join(err), "its own set: no past"
    with open_history(history_url) as history:
        assert record_run(history, faulted)
        drawn = series(trend(history, "all_reduce", SIZE, Filters()))
        assert [len(one.points) for one in drawn] in ([3, 1], [1, 3]), "a set of its own"
        (alone,) = [one for one in drawn if len(one.points) == 1]
        assert alone.points[0].excluded.startswith("injected fault faults.slow_rank=1") and alone.baseline is None
