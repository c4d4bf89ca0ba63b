"""`--html FILE` at the command line: refused before any work when the file cannot be a page (one line,
exit 2, nothing written), written whole and said with its size otherwise, on report, isolate report,
scale report and compare; and a command without it loads neither Jinja2 nor matplotlib."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jobs.cli.main import main
from jobs.history.database import open_history
from jobs.history.gather import gather
from jobs.history.ingest import write_record
from tests.jobs.inspect.html.pages import Parsed, rows_of
from tests.jobs.rundir import synthetic
from tests.jobs.rundir.synthetic import isolate_run, scale_sweep, sweep_run

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("report.txt", "the file must end in .html or .htm"),
        ("nowhere/report.html", "does not exist"),
        ("RUN/logs/report.html", "inside the run directory's records (logs/)"),
        ("RUN", "the file must end in .html or .htm"),
    ],
)
def test_a_file_that_cannot_be_a_page_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, said: str
) -> None:
    run = sweep_run(tmp_path)
    target = name.replace("RUN", str(run.path))
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main(["report", str(run.path), "--html", target]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.splitlines() == [
        f"collbench: error: --html {target}: {_said(said, target)}"
    ]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def _said(said: str, target: str) -> str:
    if "does not exist" in said:
        return f"its folder {str(Path(target).parent.resolve())!r} does not exist"
    if "records" in said:
        run = Path(target).parent.parent
        return f"{said}; allowed: beside them, e.g. {run / 'report.html'}"
    return said


def test_report_writes_the_page_beside_the_run_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = sweep_run(tmp_path)
    target = run.path / "report.html"
    assert main(["report", str(run.path), "--html", str(target)]) == 0
    err = capsys.readouterr().err.splitlines()
    size = target.stat().st_size
    assert err == [f"# HTML report: {target} ({size / 1024:.0f} KiB)"]
    assert target.read_text().startswith("<!doctype html>") and not list(run.path.glob(".report.html.*"))


def test_isolate_report_scale_report_and_compare_write_theirs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    iso = isolate_run(tmp_path, nodes=4)
    assert main(["isolate", "report", str(iso.path), "--html", str(tmp_path / "iso.html")]) == 1
    assert 'data-named="n2 n3"' in (tmp_path / "iso.html").read_text()
    sweep = scale_sweep(tmp_path / "sweeps")
    assert main(["scale", "report", str(sweep.path), "--html", str(tmp_path / "sweep.html")]) == 0
    a, b = sweep_run(tmp_path), sweep_run(tmp_path, slower=2.0)
    assert main(["compare", str(a.path), str(b.path), "--html", str(tmp_path / "cmp.html")]) == 1
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("# HTML report")]
    assert [line.split()[3] for line in said] == [str(tmp_path / f) for f in ("iso.html", "sweep.html", "cmp.html")]


def test_html_where_a_command_has_nothing_to_show_yet_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scale", "nodes=1..2", "--html", "x.html"]) == 2
    assert main(["isolate", "nodes=2", "--html", "x.html"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "collbench: error: scale: --html goes with scale wait|report SWEEP, once its runs have results"
    assert err[1].startswith("collbench: error: isolate: --html goes with isolate wait|report JOB_OR_RUN")


def test_a_report_without_html_loads_neither_jinja2_nor_matplotlib(tmp_path: Path) -> None:
    run = sweep_run(tmp_path)
    code = (
        "import sys; from jobs.cli.main import main; main(['report', sys.argv[1]]); "
        "print(sorted(m for m in ('jinja2', 'matplotlib', 'markupsafe') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(run.path)], capture_output=True, text=True, cwd=REPO)
    assert done.stdout.splitlines()[-1] == "[]", done.stderr


def test_report_against_the_history_puts_the_runs_place_on_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--against-history with --html: the terminal says the judgement as it always did, and the page holds the
    same place (a row per op and size, REGRESSION where the run fell out of its band)."""
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    with open_history(url) as history:
        for night in range(5):
            record = gather(sweep_run(tmp_path / "runs"))
            record.run.update({"started": 1e9 + night * 86400.0, "excluded": ""})
            assert write_record(history, record).recorded
    slow = sweep_run(tmp_path / "runs", slower=3.0)
    page = tmp_path / "held.html"
    code = main(["report", str(slow.path), "--against-history", "--db", url, "--html", str(page)])
    said = capsys.readouterr()
    assert code == 1, said.out + said.err
    assert "collbench: REGRESSION against the history: " in said.err
    parsed = Parsed(page.read_text())
    [table] = parsed.with_class("history")
    rows = rows_of(table)
    assert [row.children[1].text for row in rows] == [str(size) for size in synthetic.SIZES], "a row per size"
    assert {row.attrs.get("class") for row in rows} == {"bad"}, "every row of a run 3x slower is a regression"
    said_err = [line.split(": ", 2)[2] for line in said.err.splitlines() if " REGRESSION against the history: " in line]
    assert len(said_err) == len(synthetic.SIZES)
    html = page.read_text()
    assert all(html.count(f"<li>REGRESSION: {sentence}</li>") == 2 for sentence in said_err), (
        "each regression the terminal says is on the page twice, from the judgement's rows: the verdict and the section"
    )
