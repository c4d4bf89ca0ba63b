"""nccl-tests' output read back (jobs/imports): fixture logs in logs/, hand-written in the layouts of
src/common.cu at 2.10, 2.13.0 and 2.17, and src/util.cu at 2.19.6 (text and JSON_FILE_VERSION 3), and a
JSON_FILE_VERSION 1 file as 2.18 writes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.imports.model import BadImport
from jobs.imports.read import files_digest, read_outputs

LOGS = Path(__file__).parent / "logs"


def test_2_10_layout_each_op_its_own_columns_and_a_delta_for_wrong() -> None:
    with pytest.raises(
        BadImport, match=r"v2.10-all_gather.log:1: .* fit all_gather and all_to_all alike; name it with --op"
    ):
        read_outputs([LOGS / "v2.10-all_gather.log"])
    job = read_outputs([LOGS / "v2.10-all_gather.log"], op="all_gather")
    (table,) = job.tables
    assert table.op == "all_gather" and len(job.devices) == 2 and job.devices[1].bus_id == ""
    assert [(r.size, r.count, r.redop, r.root, r.in_place, r.wrong) for r in table.rows[:2]] == [
        (1024, 128, "none", -1, False, 0),
        (1024, 128, "none", -1, True, 0),
    ]
    assert table.rows[0].time_us == 20.0 and table.complete and not job.cut


def test_2_13_layout_names_no_binary_but_its_columns_fit_broadcast_alone() -> None:
    job = read_outputs([LOGS / "v2.13-broadcast.log"])
    assert job.tables[0].op == "broadcast" and {r.root for r in job.tables[0].rows} == {0}
    assert job.tables[0].iters == 50 and job.tables[0].out_of_bounds == 0


def test_several_runs_in_one_log_with_other_programs_lines_skipped_and_counted() -> None:
    job = read_outputs([LOGS / "v2.17-two-runs.log"])
    assert [t.op for t in job.tables] == ["all_reduce", "reduce_scatter"]
    assert job.skipped == 3 and job.first_skipped.endswith("v2.17-two-runs.log:7")
    assert [d.host for d in job.devices] == ["nodeA", "nodeB"] and job.devices[0].bus_id == "0000:07:00"


def test_n_a_columns_are_no_check() -> None:
    job = read_outputs([LOGS / "v2.19-no-validation.log"])
    assert {r.wrong for r in job.tables[0].rows} == {-1} and not job.tables[0].validation
    assert job.tables[0].nccl_version == 22703 and job.tables[0].tests_version == "2.19.6"


def test_a_log_cut_short_keeps_its_rows_and_says_where() -> None:
    job = read_outputs([LOGS / "v2.19-cut-short.log"])
    assert len(job.tables[0].rows) == 5 and not job.tables[0].complete
    assert job.cut == [f"{LOGS / 'v2.19-cut-short.log'}:16: the output ends mid-row (its out-of-place half kept)"]


def test_a_damaged_row_is_named_with_file_and_line() -> None:
    with pytest.raises(BadImport) as caught:
        read_outputs([LOGS / "v2.19-damaged-row.log"])
    assert str(caught.value) == f"{LOGS / 'v2.19-damaged-row.log'}:15: damaged row: algbw '0.0x2' is not a number"


def test_the_same_table_printed_by_every_rank_is_kept_once_and_said() -> None:
    job = read_outputs([LOGS / "v2.19-each-rank-printed.log"])
    assert len(job.tables) == 1
    assert job.notes == [
        f"1 duplicate table(s) left out, the first of each kept (each rank of an MPI job printed its own): "
        f"{LOGS / 'v2.19-each-rank-printed.log'}:22"
    ]


def test_json_version_3_with_per_iteration_times_and_version_1_with_a_warning() -> None:
    job = read_outputs([LOGS / "v3-all_gather.json"])
    row = job.tables[0].rows[0]
    assert job.tables[0].op == "all_gather" and len(row.per_process) == 4 and row.times_us and not job.notes
    old = read_outputs([LOGS / "v1-reduce.json"])
    assert old.tables[0].op == "reduce" and old.notes == [
        f"{LOGS / 'v1-reduce.json'}: JSON_FILE_VERSION 1 has no per-iteration times (nccl-tests 2.18.0 to "
        "2.19.2): imported without them"
    ]


def test_a_newer_json_version_is_refused_in_one_line(tmp_path: Path) -> None:
    document = json.loads((LOGS / "v3-all_gather.json").read_text())
    path = tmp_path / "v4.json"
    path.write_text(json.dumps({**document, "version": 4}))
    with pytest.raises(BadImport, match=r"^.*v4.json: JSON_FILE_VERSION 4 is not one this collbench reads .*refused$"):
        read_outputs([path])
    cut = tmp_path / "cut.json"
    cut.write_text((LOGS / "v3-all_gather.json").read_text()[:300])
    with pytest.raises(BadImport, match=r"cut.json: not an nccl-tests JSON file \(cut short or damaged\)"):
        read_outputs([cut])


def test_the_digest_is_the_files_contents_whatever_their_order_or_names(tmp_path: Path) -> None:
    one, two = LOGS / "v2.17-two-runs.log", LOGS / "v2.19-no-validation.log"
    copy = tmp_path / "renamed.log"
    copy.write_bytes(one.read_bytes())
    assert files_digest([one, two]) == files_digest([two, copy])
    assert read_outputs([copy]).digest == files_digest([one]) != files_digest([one, two])
    copy.write_bytes(one.read_bytes().replace(b"31.24", b"31.25"))
    assert files_digest([copy]) != files_digest([one])
