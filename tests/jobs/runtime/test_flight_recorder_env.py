"""A rank on a GPU asks torch's Flight Recorder for a dump in its run when NCCL's watchdog tears it down."""

from pathlib import Path

from jobs.inspect.flight_recorder import read_traces
from jobs.rundir.layout import RunDir
from jobs.runtime.heartbeat import flight_recorder_environment


def test_the_dump_lands_in_the_runs_logs_where_the_reader_looks(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    env = flight_recorder_environment(run, {})
    assert env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1" and int(env["TORCH_NCCL_TRACE_BUFFER_SIZE"]) > 0
    run.logs_dir.mkdir()
    Path(env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] + "3").write_bytes(b"\x80\x04}\x94.")  # torch appends the rank
    assert list(read_traces(run)) == [3]


def test_what_the_job_or_the_config_set_stays() -> None:
    env = flight_recorder_environment(RunDir(Path("/r")), {"TORCH_NCCL_TRACE_BUFFER_SIZE": "0"})
    assert "TORCH_NCCL_TRACE_BUFFER_SIZE" not in env
