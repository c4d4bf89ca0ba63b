"""nccl-tests' output as people keep it (issue 29): launchers' prefixes, rows with no header, processes that
each ran alone, the old error column. The fixtures in logs/ are written with nccl-tests' own printf formats
(src/common.cu at v2.11.0 and v2.17.1) and the prefixes as the launchers write them (Slurm's
write_labelled_message.c, Open MPI's iof_base_output.c, pdsh's `host: `)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.imports.deviation import tolerance
from jobs.imports.model import BadImport
from jobs.imports.prefixes import split_streams
from jobs.imports.read import read_outputs
from jobs.imports.text_rows import columns_of_values

LOGS = Path(__file__).parent / "logs"


def test_srun_label_is_stripped_and_the_printing_task_read_apart_from_the_others() -> None:
    job = read_outputs([LOGS / "srun-label-all_reduce.log"])
    (table,) = job.tables
    assert table.op == "all_reduce" and len(table.rows) == 6 and table.complete and table.stream == "srun task 0"
    assert [(d.rank, d.host) for d in job.devices] == [(0, "gpu-n1"), (1, "gpu-n2")]
    assert job.skipped == 4 and job.label.imported_as.nccl_version == "2.18.3"
    assert job.notes[0].endswith(
        "srun --label ('N: ') stripped from 20 line(s); 2 stream(s) read apart (srun task 0, srun task 1)"
    )


def test_open_mpi_tag_output_keeps_each_process_of_a_non_mpi_build_apart() -> None:
    job = read_outputs([LOGS / "ompi-tag-output-each-alone.log"])
    assert [(t.op, t.process, t.stream, len(t.rows)) for t in job.tables] == [
        ("all_gather", 0, "rank 0", 6),
        ("all_gather", 1, "rank 1", 6),
    ]
    assert [(d.host, d.pid, d.device) for d in job.devices] == [("dgx-a", 9101, 0), ("dgx-a", 9102, 1)]
    assert job.tables[1].rows[0].time_us == 41.0  # rank 1's own figures, not an average with rank 0's
    assert job.skipped == 5 and not job.cut  # Open MPI's untagged warnings and the stderr line
    assert job.notes[-1].startswith("2 processes, each alone (nranks 1): kept apart")


def test_open_mpi_timestamp_output_alone_is_stripped() -> None:
    job = read_outputs([LOGS / "ompi-timestamp-output.log"])
    assert job.tables[0].op == "reduce_scatter" and len(job.devices) == 2 and job.skipped == 0
    assert job.notes == [
        f"{LOGS / 'ompi-timestamp-output.log'}: Open MPI --timestamp-output ('DATE<stdout>:') stripped from 18 line(s)"
    ]


def test_pdsh_hosts_each_alone_are_processes_of_their_own_and_two_jobs_are_refused() -> None:
    job = read_outputs([LOGS / "pdsh-each-host-alone.log"])
    assert [(t.op, t.process, t.stream) for t in job.tables] == [
        ("broadcast", 0, "host gpu-3"),
        ("broadcast", 1, "host gpu-4"),
    ]
    assert [d.host for d in job.devices] == ["gpu-3", "gpu-4"]
    with pytest.raises(BadImport) as refused:
        read_outputs([LOGS / "pdsh-two-jobs.log"])
    assert str(refused.value) == (
        f"{LOGS / 'pdsh-two-jobs.log'}:19: all_reduce ran on other ranks (gpu-4) than {LOGS / 'pdsh-two-jobs.log'}:1 "
        "(gpu-3): one run directory holds one job's ranks; import them separately"
    )


def test_rows_with_no_header_take_their_ranks_from_busbw_over_algbw_and_their_columns_from_the_values() -> None:
    path = LOGS / "rows-only-all_reduce.log"
    job = read_outputs([path])
    (table,) = job.tables
    assert table.headerless and table.op == "all_reduce" and len(job.devices) == 8 and table.complete
    assert {d.host for d in job.devices} == {"unknown"} and table.avg_busbw == 55.1
    assert job.notes == [
        f"{path}:1: ranks: 8, inferred from busbw/algbw = 1.75 (all_reduce: 2(n-1)/n; all 6 placements within their "
        "rounding); give --ranks N to say otherwise",
        "rows with no header: their iterations and warm-up are not said (recorded as nccl-tests' defaults, 20 and 5)",
    ]
    assert len(read_outputs([path], ranks=8).devices) == 8 and read_outputs([path], ranks=8).notes == job.notes[1:]


def test_the_host_a_prefix_names_is_kept_where_it_is_the_only_one() -> None:
    with pytest.raises(
        BadImport, match=r"pdsh-rows-only.log:1: rows with no header name no binary and their columns fit"
    ):
        read_outputs([LOGS / "pdsh-rows-only.log"], ranks=1)
    job = read_outputs([LOGS / "pdsh-rows-only.log"], op="all_reduce", ranks=1)
    assert [(d.rank, d.host) for d in job.devices] == [(0, "gpu-7")]


def test_interleaved_processes_without_a_prefix_are_told_apart_by_order_with_overflowing_columns() -> None:
    job = read_outputs([LOGS / "mpirun-non-mpi-interleaved.log"])
    first, second = job.tables
    assert (first.process, second.process) == (0, 1) and first.complete and second.complete and not job.cut
    assert [r.time_us for r in first.rows if not r.in_place] == [700.0, 1400.0, 2100.0]
    assert [r.time_us for r in second.rows if not r.in_place] == [703.0, 1403.0, 2103.0]
    assert first.rows[0].algbw == 1533.92  # wider than nccl-tests' %6.2f column
    assert [(d.pid, d.bus_id) for d in job.devices] == [(3301, "0000:18:00"), (3302, "0000:2a:00")]
    assert "told apart by the order they were printed" in job.notes[-1]


def test_pasted_rows_of_several_processes_are_kept_apart_with_ranks_1_and_refused_otherwise() -> None:
    path = LOGS / "rows-only-three-processes.log"
    job = read_outputs([path], op="all_reduce", ranks=1)
    assert [t.process for t in job.tables] == [0, 1, 2] and len(job.devices) == 3
    assert [t.rows[0].time_us for t in job.tables] == [700.0, 702.0, 701.0]  # the k-th printed is process k
    with pytest.raises(BadImport) as refused:
        read_outputs([path], op="all_reduce", ranks=2)
    assert str(refused.value) == (
        f"{path}:1: size 1073741824 (float sum root -1, out-of-place) appears 3 times in one table of 2 ranks: several "
        "processes (or pasted logs) printed their own rows; where each process ran alone give --ranks 1, else import "
        "each process's output on its own"
    )


def test_interleaved_processes_on_several_gpus_each_are_refused_in_one_line() -> None:
    with pytest.raises(BadImport) as refused:
        read_outputs([LOGS / "mpirun-two-gpu-processes-interleaved.log"])
    assert str(refused.value).startswith(
        f"{LOGS / 'mpirun-two-gpu-processes-interleaved.log'}:1: its '# Using devices' lines name rank(s) 0, 1 "
        "more than once"
    )


def test_the_old_error_column_is_a_max_deviation_judged_against_nccl_tests_tolerance() -> None:
    job = read_outputs([LOGS / "v2.11-sendrecv-error-column.log"])
    (table,) = job.tables
    assert table.op == "sendrecv" and not job.notes  # nccl-tests' own 1 out of bounds agrees
    judged = [(r.size, r.in_place, r.max_delta, r.wrong, r.beyond_tolerance) for r in table.rows]
    assert judged[2:5] == [
        (2097152, False, 1e-06, 0, False),  # within float's 1e-05 x (2 - 1)
        (2097152, True, 0.0, 0, False),
        (4194304, False, 300.0, -1, True),  # beyond: wrong, and no count of elements is made up
    ]
    assert (
        tolerance("float", 2) == 1e-05
        and tolerance("half", 3) == 2e-02
        and tolerance("int32", 8) == pytest.approx(7e-200)
    )
    assert tolerance("float", 1) == 0.0  # a process alone: any deviation at all


def test_a_disagreeing_out_of_bounds_count_is_said(tmp_path: Path) -> None:
    path = tmp_path / "old.log"
    path.write_text((LOGS / "v2.11-sendrecv-error-column.log").read_text().replace(": 1 FAILED", ": 0 OK"))
    assert read_outputs([path]).notes == [
        f"{path}:1: nccl-tests counted 0 row(s) out of bounds, its error column read against the tolerance gives 1 "
        "(the column prints one digit)"
    ]


@pytest.mark.parametrize(
    ("row", "columns"),
    [
        ("1024 256 float sum -1 1.0 0.1 0.1 0 1.0 0.1 0.1 0", ("size", "count", "type", "redop", "root")),
        ("1024 256 float sum 1.0 0.1 0.1 0e+00 1.0 0.1 0.1 0e+00", ("size", "count", "type", "redop")),
        ("1024 256 float 0 1.0 0.1 0.1 0e+00 1.0 0.1 0.1 0e+00", ("size", "count", "type", "root")),
        ("1024 256 float 1.0 0.1 0.1 0e+00 1.0 0.1 0.1 0e+00", ("size", "count", "type")),
    ],
)
def test_the_columns_of_a_row_with_no_header_are_told_from_its_values(row: str, columns: tuple[str, ...]) -> None:
    assert columns_of_values(row.split(), "f:1") == (columns, 4)


def test_a_row_with_no_header_fitting_no_layout_is_refused_with_what_would_make_it_readable() -> None:
    with pytest.raises(
        BadImport, match=r"^f:3: a row with no header whose 14 columns fit none .* paste the column header"
    ):
        columns_of_values(["1024", "256", "float", "sum", "-1", "x", *["1.0", "0.1", "0.1", "0"] * 2], "f:3")


def test_prefixes_are_told_by_the_lines_of_nccl_tests_they_stand_before() -> None:
    plain = split_streams(["srun: error: n1: task 1: Exited", "# nThread 1 nGpus 1 minBytes 8", "        8   2  float"])
    assert plain.kind == "" and len(plain.streams) == 1
    labelled = split_streams([" 0: # Using devices", "10: #  Rank 10 Group 0", "P1  3: # nThread 1", "stray"])
    assert labelled.kind.startswith("srun --label") and [s.key for s in labelled.streams] == [
        "srun task 0",
        "srun task 10",
        "srun component 1 task 3",
        "",
    ]
    tagged = split_streams(["Tue Mar  4 10:00:00 2025[1,3]<stdout>:# Using devices"])
    assert tagged.streams[0].key == "rank 3" and tagged.streams[0].lines[0].text == "# Using devices"


def test_one_process_printing_size_0_twice_is_its_own_rounding_not_two_processes() -> None:
    path = LOGS / "alltoall-one-process-b8.log"  # alltoall_perf -b 8 -e 1M -f 2 -g 2: 8 and 16 B print as 0 B
    job = read_outputs([path])
    (table,) = job.tables
    assert table.op == "all_to_all" and table.process is None and [d.rank for d in job.devices] == [0, 1]
    assert [(r.size, r.count, r.time_us) for r in table.rows[:4]] == [
        (
            0,
            0,
            11.0,
        ),
        (0, 0, 11.13),
        (32, 4, 11.14),
        (32, 4, 11.27),
    ]
    assert len(table.rows) == 34 and table.complete and not job.cut
    assert job.notes == [
        f"{path}:1: all_to_all on 2 rank(s) printed size 0 B 2 times (8 and 16 B asked for): nccl-tests rounds the "
        "count down per rank, so sizes asked for one after the other print alike; one process's own rows, the "
        "first of each kept"
    ]


def test_a_size_above_0_printed_twice_by_one_process_is_refused(tmp_path: Path) -> None:
    lines = (LOGS / "alltoall-one-process-b8.log").read_text().splitlines(keepends=True)
    row_32 = next(index for index, line in enumerate(lines) if line.split()[:1] == ["32"])
    path = tmp_path / "twice.log"
    path.write_text("".join([*lines[: row_32 + 1], lines[row_32], *lines[row_32 + 1 :]]))
    with pytest.raises(BadImport) as refused:
        read_outputs([path])
    assert str(refused.value).startswith(
        f"{path}:1: size 32 (float none root -1, out-of-place) appears 2 times in a table one process printed (its "
        "'# Using devices' lines name each of its 2 rank(s) once)"
    )


def test_pasted_rows_printing_size_0_twice_are_one_job_with_ranks_told_by_busbw_over_algbw(tmp_path: Path) -> None:
    rows = [line for line in (LOGS / "alltoall-one-process-b8.log").read_text().splitlines() if line[:1] == " "]
    path = tmp_path / "pasted.log"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(BadImport, match=r"pasted.log:1: .* fit all_gather and all_to_all alike; name it with --op"):
        read_outputs([path])
    job = read_outputs([path], op="all_to_all")
    assert len(job.devices) == 2 and [len(t.rows) for t in job.tables] == [34]
    assert job.notes[0] == (
        f"{path}:1: ranks: 2, inferred from busbw/algbw = 0.5 (all_to_all: (n-1)/n; all 30 placements within "
        "their rounding); give --ranks N to say otherwise"
    )
    assert "printed size 0 B 2 times: nccl-tests rounds" in job.notes[1]  # no header: the sizes asked for unsaid


def test_processes_each_alone_printing_size_0_twice_keep_one_each(tmp_path: Path) -> None:
    figures = "    10.{}    0.00    0.00       0    10.{}    0.00    0.00    N/A"
    zero = "           0             0     float    none      -1" + figures
    sixteen = "          16             4     float    none      -1" + figures
    rows = [zero.format(10 + k, 20 + k) for k in range(4)] + [sixteen.format(30 + k, 40 + k) for k in range(2)]
    path = tmp_path / "two-alone.log"  # alltoall_perf -b 4 -e 16 on 1 rank each: 4 and 8 B print as 0 B
    path.write_text("\n".join(rows) + "\n")
    job = read_outputs([path], op="all_to_all", ranks=1)
    assert len(job.devices) == 2 and [t.process for t in job.tables] == [0, 1]
    assert [[(r.size, r.time_us) for r in t.rows if not r.in_place] for t in job.tables] == [
        [(0, 10.1), (16, 10.3)],
        [(0, 10.11), (16, 10.31)],
    ]


def test_rows_whose_figures_disagree_on_the_ranks_are_refused_naming_ranks(tmp_path: Path) -> None:
    eight = (LOGS / "rows-only-all_reduce.log").read_text().splitlines()[0]
    sixteen = (LOGS / "rows-only-all_reduce-16-ranks.log").read_text().splitlines()[1]
    path = tmp_path / "mixed.log"
    path.write_text(f"{eight}\n{sixteen}\n")
    with pytest.raises(BadImport) as refused:
        read_outputs([path], op="all_reduce")
    assert str(refused.value) == (
        f"{path}:1: rows with no header: the number of ranks is unknown: its rows' busbw/algbw (1.87515) fit no "
        "rank count of all_reduce; give it with --ranks N (the ranks of the job that printed them; --ranks 1 where "
        "each process ran alone and printed its own rows)"
    )
    assert len(read_outputs([path], op="all_reduce", ranks=8).devices) == 8
