"""--against-history on report and compare, `history show`, `history prune` and `history export` as a user
runs them, on SQLite and PostgreSQL (the history_url fixture); the run directories are only read."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from jobs.cli.main import main
from jobs.history import schema
from jobs.history.database import History, open_history
from jobs.history.ingest import record_run
from jobs.rundir.layout import RunDir
from tests.jobs.rundir import synthetic
from tests.jobs.rundir.files import fingerprint

NIGHT = 86400.0


def _recorded(history: History, tmp_path: Path, slower: list[float], first_night: float = 1e9) -> list[RunDir]:
    runs = [synthetic.sweep_run(tmp_path / "past", slower=s) for s in slower]
    for night, run in enumerate(runs):
        assert record_run(history, run)
        with history.engine.begin() as connection:
            when = update(schema.runs).where(schema.runs.c.run_id == run.run_id)
            connection.execute(when.values(started=first_night + night * NIGHT))
    return runs


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_run_slower_than_its_history_is_a_regression_naming_its_figures_and_runs(
    history_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = open_history(history_url)
    past = _recorded(history, tmp_path, [1.0, 1.02, 0.98, 1.0])
    slow, same = synthetic.sweep_run(tmp_path / "new", slower=2.0), synthetic.sweep_run(tmp_path / "new", slower=1.0)
    before = fingerprint(tmp_path / "new")
    code, out, err = _run(capsys, "report", str(slow.path), "--against-history", "--db", history_url)
    assert code == 1, err
    assert f"# {slow.run_id} against the history" in out and "config " in out and "1 node(s)" in out
    regressions = [line for line in err.splitlines() if line.startswith("collbench: REGRESSION against the history")]
    assert len(regressions) == len(synthetic.SIZES)
    assert "below the median" in regressions[0] and "of the last 4 healthy runs (MAD" in regressions[0]
    assert f"judged against 4 run(s): {', '.join(r.run_id for r in past)}" in err
    code, out, err = _run(capsys, "compare", str(same.path), "--against-history", "--db", history_url)
    assert code == 0, err
    assert "REGRESSION" not in err and out.count(" ok") == len(synthetic.SIZES)
    json_file = tmp_path / "held.json"
    code, out, err = _run(capsys, "compare", str(slow.path), "--against-history", "--db", history_url,
                          "--json", str(json_file))  # fmt: skip
    assert code == 1 and "REGRESSION against the history" in err
    (held,) = json.loads(json_file.read_text())["against_history"]
    assert held["run_id"] == slow.run_id and len(held["regressions"]) == len(synthetic.SIZES)
    assert fingerprint(tmp_path / "new") == before, "reading the history wrote into a run directory"
    assert _run(capsys, "compare", str(slow.path), str(same.path), "--against-history")[0] == 2

    # the run's place in its history, from the database alone: the fourth run against the three before it
    code, out, err = _run(capsys, "history", "show", past[3].run_id[:-2], "--db", history_url)
    assert code == 0, err
    assert f"judged against 3 run(s): {', '.join(r.run_id for r in past[:3])}" in out
    code, out, _ = _run(capsys, "history", "show", past[3].run_id, "--db", history_url, "--format", "json")
    shown = json.loads(out)
    assert shown["view"] == "show" and shown["nodes"] == 1 and len(shown["rows"]) == len(synthetic.SIZES)
    row = shown["rows"][-1]
    assert (row["runs"], row["rank"], row["verdict"]) == (3, 2, "ok")
    assert row["percentile"] == pytest.approx(100 * 2 / 3)
    code, out, _ = _run(capsys, "history", "show", past[3].run_id, "--db", history_url, "--format", "csv")
    assert [r["verdict"] for r in csv.DictReader(io.StringIO(out))] == ["ok"] * len(synthetic.SIZES)
    code, out, _ = _run(capsys, "history", "show", past[0].run_id, "--db", history_url)
    assert code == 0 and "# too little history to judge any row: at most 0 healthy run(s)" in out
    assert _run(capsys, "history", "show", "nosuchrun", "--db", history_url)[0] == 2


def test_too_little_history_is_one_line_and_does_not_fail(
    history_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _recorded(open_history(history_url), tmp_path, [1.0, 1.0])
    slow = synthetic.sweep_run(tmp_path / "new", slower=3.0)
    code, _, err = _run(capsys, "report", str(slow.path), "--against-history", "--db", history_url)
    assert code == 0, err
    (said,) = [line for line in err.splitlines() if "history" in line and "new history at" not in line]
    assert said == (
        "collbench: history: too little history to judge any row: at most 2 healthy run(s) before it with the same "
        "cluster, config fingerprint, node count and world size, at least 3 needed; not judged"
    )
    assert _run(capsys, "report", str(slow.path), "--against-history", "--tolerance", "lots")[0] == 2


def test_prune_and_export(history_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = open_history(history_url)
    runs = _recorded(history, tmp_path, [1.0, 1.1, 1.2, 1.3, 1.4])
    target = tmp_path / "out" / "history.json"
    target.parent.mkdir()
    code, _, err = _run(capsys, "history", "export", "--db", history_url, "--output", str(target))
    assert code == 0 and "5 run(s) written" in err
    exported = json.loads(target.read_text())["runs"]
    assert [r["run_id"] for r in exported] == [r.run_id for r in runs]
    assert len(exported[0]["results"]) == len(synthetic.SIZES) and exported[0]["hosts"][0]["host"] == "vm"
    assert [p.name for p in target.parent.iterdir()] == ["history.json"], "written atomically, no scratch left"
    code, out, _ = _run(capsys, "history", "export", "--db", history_url, "--format", "csv", "--since", "2001-09-11")
    lines = list(csv.DictReader(io.StringIO(out)))
    assert len(lines) == 3 * len(synthetic.SIZES) and lines[0]["run_id"] == runs[2].run_id and "busbw" in lines[0]

    code, out, _ = _run(capsys, "history", "prune", "--db", history_url, "--keep-last", "3", "--dry-run")
    assert code == 0 and out.splitlines()[-1].endswith(
        f"would remove 2 run(s) with their rows ({2 * len(synthetic.SIZES)} results, 2 hosts)"
    )
    assert _count(history, "runs") == 5, "a dry run removes nothing"
    code, out, _ = _run(capsys, "history", "prune", "--db", history_url, "--before", "2001-09-10")
    assert code == 0 and f"removed {runs[0].run_id}" in out and "removed 1 run(s)" in out
    code, out, _ = _run(capsys, "history", "prune", "--db", history_url, "--keep-last", "2", "--format", "json")
    assert json.loads(out)["runs"] == [runs[1].run_id, runs[2].run_id]
    assert _count(history, "runs") == 2 and _count(history, "results") == 2 * len(synthetic.SIZES)
    assert _count(history, "hosts") == 2
    assert _run(capsys, "history", "prune", "--db", history_url)[0] == 2


def _count(history: History, table: str) -> int:
    with history.engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(schema.metadata.tables[table])).scalar_one())


def test_run_holds_the_run_it_made_against_the_history(tmp_path: Path) -> None:
    from tests.conftest import collbench

    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    history = open_history(url)
    past = _recorded(history, tmp_path, [0.01, 0.01, 0.01])  # a past far faster than any real run here
    history.close()
    words = ["ranks=2", "bench.ops=[all_reduce]", "bench.min_bytes=1K", "bench.max_bytes=4K", f"history.url={url}"]
    refused = collbench("run", *words, f"output_dir={tmp_path / 'refused'}", "--against-history", "--tolerance",
                        "lots", cwd=tmp_path)  # fmt: skip
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert not (tmp_path / "refused").exists(), "bad input starts nothing"
    result = collbench("run", *words, f"output_dir={tmp_path / 'runs'}", "--against-history", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "# collbench all_reduce: 2 ranks" in result.stdout
    assert result.stderr.count("collbench: REGRESSION against the history") == len(synthetic.SIZES), result.stderr
    assert f"judged against 3 run(s): {', '.join(r.run_id for r in past)}" in result.stderr
    history = open_history(url)
    with history.engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(schema.runs)).scalar() == 4, "the run recorded"
    history.close()
