"""Hang attribution under NCCL from torch's Flight Recorder dumps, on hand-built dumps pickled as
ProcessGroupNCCL writes them (FlightRecorder.cpp: a dict of plain values), and the verdict they give."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from jobs.inspect.flight_recorder import TRACE_PREFIX, lagging_groups, load_plain, read_traces
from jobs.inspect.postmortem import JobFacts, judge
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import RankState, RankStatus
from slurm.evidence import read_step_messages


def entry(seq: int, state: str, group: str = "0", desc: str = "default_pg") -> dict[str, Any]:
    return {
        "record_id": seq, "pg_id": 0, "process_group": (group, desc), "collective_seq_id": seq, "p2p_seq_id": 0,
        "op_id": seq, "profiling_name": "nccl:all_reduce", "time_created_ns": 1_000 * seq,
        "input_sizes": [[1048576]], "input_dtypes": ["Float"], "output_sizes": [[1048576]], "output_dtypes": ["Float"],
        "state": state, "time_discovered_started_ns": None, "time_discovered_completed_ns": None,
        "retired": state == "completed", "timeout_ms": 120000, "is_p2p": False,
        "frames": [{"name": "all_reduce", "filename": "distributed_c10d.py", "line": 2696}],
    }  # fmt: skip


def dump(last: int, world: int = 4) -> dict[str, Any]:
    """A rank's dump: collectives 1..last of the world's group, the last one still waiting."""
    entries = [entry(seq, "completed" if seq < last else "started") for seq in range(1, last + 1)]
    status = {
        "0": {"last_enqueued_collective": last, "last_started_collective": last, "last_completed_collective": last - 1}
    }
    config = {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(world)))}}
    return {"version": "2.4", "pg_config": config, "pg_status": status, "entries": entries}


def write_dumps(run: RunDir, lasts: dict[int, int]) -> None:
    run.logs_dir.mkdir(parents=True, exist_ok=True)
    for rank, last in lasts.items():
        (run.logs_dir / f"{TRACE_PREFIX}{rank}").write_bytes(pickle.dumps(dump(last)))


def test_the_rank_behind_its_group_is_found_from_the_dumps(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    write_dumps(run, {0: 57, 1: 57, 2: 56, 3: 57})
    [group] = lagging_groups(read_traces(run), world_size=4)
    assert (group.group, group.desc, group.collective, group.what) == ("0", "default_pg", 57, "nccl:all_reduce")
    assert (group.behind, group.ahead) == ({2: 56}, [0, 1, 3])


def test_dumps_that_agree_name_nobody(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    write_dumps(run, {0: 9, 1: 9})
    assert lagging_groups(read_traces(run), world_size=2) == []


def test_a_finished_group_whose_buffers_kept_different_stretches_names_nobody(tmp_path: Path) -> None:
    """Ring buffers of 2,000 entries: a rank that ran more collectives since has dropped a group's later ones;
    the group's members ahead completed theirs, so nobody waits and nobody is behind."""
    run = RunDir(tmp_path)
    run.logs_dir.mkdir(parents=True)
    for rank, last in {0: 12, 1: 9}.items():
        finished = dump(last, world=2)
        finished["entries"] = [entry(seq, "completed") for seq in range(1, last + 1)]
        (run.logs_dir / f"{TRACE_PREFIX}{rank}").write_bytes(pickle.dumps(finished))
    assert lagging_groups(read_traces(run), world_size=2) == []


def test_a_pickle_that_names_a_class_or_function_is_refused_not_run(tmp_path: Path) -> None:
    class Boom:
        def __reduce__(self) -> tuple[Any, tuple[str]]:
            return (os.system, ("echo pwned",))

    with pytest.raises(pickle.UnpicklingError, match=r"refused \w+\.system"):
        load_plain(pickle.dumps(Boom()))
    run = RunDir(tmp_path)
    write_dumps(run, {0: 3})
    (run.logs_dir / f"{TRACE_PREFIX}1").write_bytes(pickle.dumps({"entries": [Boom()]}))
    (run.logs_dir / f"{TRACE_PREFIX}2").write_bytes(b"\x80\x04cut short")
    assert sorted(read_traces(run)) == [0], "a refused or broken dump is left out, the others still read"


def test_under_the_watchdog_the_verdict_names_the_missing_rank_not_the_ranks_it_tore_down(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    write_dumps(run, {0: 57, 1: 57, 2: 56, 3: 57})
    statuses = {
        r: RankStatus(rank=r, host=f"n{r // 2 + 1}", state=RankState.RUNNING, pid=100 + r, device=f"cuda:{r % 2}",
                      started=1.0, updated=1.0)
        for r in range(4)
    }  # fmt: skip
    steps = read_step_messages([f"srun: error: n{r // 2 + 1}: task {r}: Aborted (core dumped)" for r in (0, 1, 3)])
    report = judge(4, statuses, {}, steps, JobFacts(state="FAILED"), lagging=lagging_groups(read_traces(run), 4))
    assert report.causes[0].startswith(
        "rank 2 on n2 hung: never entered collective 57 (nccl:all_reduce) of group 0 (default_pg), "
        "where rank(s) 0-1,3 waited for it (NCCL flight recorder: its last was 56)"
    )
    assert len(report.causes) == 1, report.causes
    assert report.consequences[0].startswith("rank(s) 0-1,3 noticed a lost peer")
