"""Every record of the run directory: written and read back the same, every format version read, and an
unknown version or a damaged file named in one line (never a KeyError)."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from collectives.results import SummaryRow
from jobs.rundir.layout import RunDir, find_run
from jobs.rundir.records.attempts import ATTEMPTS, Attempt, Attempts
from jobs.rundir.records.codec import Format, RecordError
from jobs.rundir.records.isolate import (
    ISOLATE_PLAN,
    ISOLATE_ROUND,
    ISOLATE_VERDICT,
    GroupFigure,
    IsolatePlan,
    IsolateRound,
    IsolateVerdict,
    LinkVerdict,
    NodeVerdict,
    RoundGroup,
    StoppedNode,
)
from jobs.rundir.records.ports import PORTS, NetInterface, PortSnapshot, RdmaPort
from jobs.rundir.records.rank import (
    HEARTBEAT,
    STATUS,
    Beat,
    HeartbeatPhase,
    RankState,
    RankStatus,
    SetupSpan,
    SignalNotice,
)
from jobs.rundir.records.run import RUN, LauncherName, RunMeta
from jobs.rundir.records.slurm import SLURM_FACTS, JobFacts
from jobs.rundir.records.summary import SUMMARY, SetupTime, Summary
from jobs.rundir.records.sweep import SWEEP, SweepEntry, SweepMeta
from jobs.rundir.writing import create_exclusive

ROW = SummaryRow(
    op="all_reduce",
    size=1024,
    count=256,
    dtype="float32",
    redop="sum",
    root=-1,
    in_place=True,
    nranks=2,
    ranks_reporting=2,
    time_us=10.0,
    algbw=0.1,
    busbw=0.1,
    wrong=0,
    slowest_rank=1,
    slowest_host="n2",
    slowest_time_us=11.0,
    fastest_rank=0,
    fastest_host="n1",
    fastest_time_us=9.0,
    wrong_ranks=[],
    page_faults_per_iter=0.0,
    timer="host",
    requested_size=1024,
)
SETUP = SetupTime(
    ranks=2,
    slowest_rank=1,
    slowest_host="n2",
    slowest_s=0.5,
    median_s=0.4,
    last_arrival_rank=1,
    last_arrival_host="n2",
    arrival_spread_s=0.1,
    after_all_arrived_s=0.3,
    connect_ranks=2,
    connect_slowest_rank=0,
    connect_slowest_host="n1",
    connect_slowest_s=0.8,
    connect_median_s=0.6,
)
OLD_SETUP = [f for f in fields(SetupTime) if not f.name.startswith("connect_")]
"""SetupTime's fields in summary.json format 2, before the first collective's figures."""

EXAMPLES: list[tuple[Format[Any], Any]] = [
    (RUN, RunMeta(run_id="r", launcher=LauncherName.SLURM, world_size=8, nodes=2, task="isolate", job_id="12")),
    (
        STATUS,
        RankStatus(
            rank=3,
            host="n2",
            pid=7,
            device="cuda:1",
            state=RankState.STOPPED,
            started=1.0,
            updated=2.0,
            setup=SetupSpan(started=1.0, done=1.5, seconds=0.5, connect_s=0.25),
            signals=[SignalNotice(signal="SIGUSR2", at=1.7)],
            stopped_at=2.0,
            signal="SIGTERM",
            error="stopped by SIGTERM",
            addresses=["10.0.0.2"],
        ),
    ),
    (HEARTBEAT, Beat(rank=3, host="n2", phase=HeartbeatPhase.END, at=5.0, total=4, index=2, op="all_gather", size=64)),
    (ATTEMPTS, Attempts(attempts=[Attempt(0, "n[1-2]", 1.0), Attempt(1, "n[1-2]", 9.0, 4, "NODE_FAIL")])),
    (
        SUMMARY,
        Summary(run_id="r", passed=False, problems=["rank 1 failed"], setup=SETUP, fabric={"hosts": []}, rows=[ROW]),
    ),
    (SLURM_FACTS, JobFacts(state="NODE_FAIL", nodes="n[1-2]", unhealthy={"n2": "down"}, unanswering=["n2"])),
    (
        PORTS,
        PortSnapshot(
            host="n1",
            taken_at=1.0,
            rdma={"mlx5_0": {"1": RdmaPort(state="ACTIVE", rate_gbps=400.0, counters={"symbol_error": 3})}},
            net={"eth0": NetInterface(operstate="up", speed_mbps=25000, mtu=1500)},
        ),
    ),
    (
        SWEEP,
        SweepMeta(
            sweep_id="sweep-20250101-000000-abcdef",
            created=1.0,
            config="slurm",
            overrides=["bench.iters=5"],
            node_counts=[1, 2],
            entries=[SweepEntry(nodes=1, run_dir="/r/1", job_id="12"), SweepEntry(nodes=2, error="refused")],
        ),
    ),
    (ISOLATE_PLAN, IsolatePlan(mode="pairs", hosts=["n1", "n2"], ranks=[[0], [1]], started=3.0)),
    (ISOLATE_ROUND, IsolateRound(round=2, groups=[GroupFigure(nodes=["n1", "n2"], busbw=1.5)], seconds=0.4)),
    (
        ISOLATE_VERDICT,
        IsolateVerdict(
            run_id="r",
            mode="pairs",
            hosts=["n1", "n2"],
            rounds=[RoundGroup(1, ["n1", "n2"], 0.2)],
            round_seconds=[1.0],
            unfinished=[],
            found=True,
            stopped=[StoppedNode("n3", "rank 4 dead")],
            exclude="slurm.exclude=n3",
            drain="scontrol ...",
            problems=[],
            level=1.0,
            spread=0.1,
            tolerance=0.15,
            nodes=[NodeVerdict("n1", 0, 1, 1, 0.2, 0.2)],
            bad_links=[LinkVerdict(["n1", "n2"], 0.2, 0.2)],
            matrix=[("n1", "n2", 0.2)],
        ),
    ),
]
IDS = [fmt.name for fmt, _ in EXAMPLES]

FORMAT_1: dict[str, dict[str, Any]] = {
    "run.json": {"layout_version": 1, "run_id": "r", "launcher": "local", "world_size": 2, "nodes": 1, "job_id": 77},
    "status/rank-N.json": {
        "rank": 0,
        "local_rank": 0,
        "node_rank": 0,
        "host": "vm",
        "pid": 5,
        "device": "cpu",
        "job_id": None,
        "master_addr": "127.0.0.1",
        "master_port": 29500,
        "addresses": [],
        "attempt": 0,
        "started": 1.0,
        "state": "failed",
        "updated": 2.0,
        "failed_at": 2.0,
        "error": "RuntimeError: x",
        "traceback": "...",
        "setup": {"started": 1.0, "done": 1.2, "seconds": 0.2},
        "signals": [{"signal": "SIGUSR2", "at": 1.5}],
    },
    "heartbeat/rank-N.json": {
        "rank": 0,
        "host": "vm",
        "phase": "start",
        "at": 1.0,
        "total": 2,
        "index": 1,
        "op": "all_reduce",
        "size": 8,
        "root": -1,
        "in_place": True,
    },
    "attempts.json": {
        "attempts": [{"number": 0, "nodes": "n1", "started": 1.0, "resume_from": 0, "previous_ended": ""}]
    },
    "summary.json": {"run_id": "r", "passed": True, "problems": [], "setup": None, "fabric": None, "rows": []},
    "slurm.json": {"state": "COMPLETED", "nodes": "n1", "unhealthy": {}, "unanswering": []},
    "fabric/ports-<host>-<when>.json": {
        "host": "n1",
        "taken_at": 1.0,
        "rdma": {
            "mlx5_0": {
                "1": {
                    "state": "ACTIVE",
                    "phys_state": "LinkUp",
                    "rate": "400 Gb/sec (4X NDR)",
                    "rate_gbps": 400.0,
                    "link_layer": "InfiniBand",
                    "counters": {"symbol_error": 0},
                }
            }
        },
        "net": {"eth0": {"operstate": "up", "speed_mbps": None, "mtu": 1500}},
    },
    "sweep.json": {
        "sweep_id": "sweep-20250101-000000-abcdef",
        "created": 1.0,
        "config": None,
        "overrides": [],
        "node_counts": [1, 2],
        "entries": [
            {"nodes": 1, "run_dir": "/r/1", "job_id": "12", "error": None},
            {"nodes": 2, "run_dir": None, "job_id": None, "error": "sbatch: error: refused"},
        ],
    },
    "isolate/plan.json": {"mode": "pairs", "hosts": ["n1", "n2"], "ranks": [[0], [1]], "started": 1.0},
    "isolate/rounds.jsonl line": {"round": 1, "groups": [{"nodes": ["n1", "n2"], "busbw": 1.0}], "seconds": 0.5},
    "isolate.json": {
        "run_id": "r",
        "mode": "pairs",
        "hosts": ["n1"],
        "rounds": [],
        "round_seconds": [],
        "unfinished": [],
        "found": False,
        "stopped": [],
        "exclude": "",
        "drain": "",
        "problems": [],
    },
}
"""Each record as collbench wrote it before records carried a version (from the code of that time)."""


@pytest.mark.parametrize(("fmt", "record"), EXAMPLES, ids=IDS)
def test_every_record_reads_back_as_written(tmp_path: Path, fmt: Format[Any], record: Any) -> None:
    path = tmp_path / "record.json"
    fmt.write(path, record)
    assert fmt.read(path) == record
    assert json.loads(path.read_text())["version"] == fmt.version


@pytest.mark.parametrize(("fmt", "record"), EXAMPLES, ids=IDS)
def test_format_1_without_a_version_still_reads(fmt: Format[Any], record: Any) -> None:
    read = fmt.decode(json.dumps(FORMAT_1[fmt.name]).encode(), "old")
    assert isinstance(read, type(record)) and read.version == fmt.version


def test_format_1_is_converted_to_the_types_of_today() -> None:
    meta = RUN.decode(json.dumps(FORMAT_1["run.json"]).encode(), "run.json")
    assert (meta.job_id, meta.launcher, meta.task) == ("77", LauncherName.LOCAL, "sweep")
    status = STATUS.decode(json.dumps(FORMAT_1["status/rank-N.json"]).encode(), "rank-0")
    assert status.state is RankState.FAILED and status.job_id == "" and status.setup == SetupSpan(1.0, 1.2, 0.2)
    assert status.signals == [SignalNotice("SIGUSR2", 1.5)] and status.ended_at == 2.0


@pytest.mark.parametrize(("fmt", "record"), EXAMPLES, ids=IDS)
def test_a_newer_format_is_named_in_one_line(fmt: Format[Any], record: Any) -> None:
    with pytest.raises(RecordError) as caught:
        fmt.decode(json.dumps({"version": 99, "anything": "else"}).encode(), "some/file")
    message = str(caught.value)
    assert message == (
        f"some/file: {fmt.name} format 99 is newer than this collbench reads (formats 1 to {fmt.version}): "
        "use the collbench that wrote it, or a newer one"
    )
    assert "\n" not in message


def test_an_older_format_than_any_read_is_named_in_one_line() -> None:
    with pytest.raises(
        RecordError, match=r"^run.json: run.json format 0 is older than this collbench reads \(formats 1 to 4\)$"
    ):
        RUN.decode(b'{"version": 0, "run_id": "r"}', "run.json")


def test_run_json_of_format_2_reads_as_a_run_no_import_made() -> None:
    meta = RUN.decode(b'{"version": 2, "run_id": "r", "launcher": "slurm", "world_size": 2, "nodes": 1}', "run.json")
    assert meta.launcher is LauncherName.SLURM and meta.imported_from == [] and meta.version == 4
    imported = RunMeta(run_id="r", launcher=LauncherName.IMPORTED, world_size=8, nodes=1, imported_from=["a.log"])
    assert RUN.decode(RUN.encode(imported), "run.json") == imported


def test_a_status_of_format_3_reads_with_no_first_collective_recorded() -> None:
    old = {"version": 3, "rank": 1, "host": "n1", "pid": 7, "device": "cuda:0", "state": "ok", "started": 1.0}
    old |= {"updated": 2.0, "setup": {"started": 1.0, "done": 1.5, "seconds": 0.5}}
    status = STATUS.decode(json.dumps(old).encode(), "rank-1")
    assert status.version == 4 and status.setup == SetupSpan(1.0, 1.5, 0.5, connect_s=0.0)


def test_a_summary_of_format_2_reads_with_no_first_collective_figures() -> None:
    old = {"version": 2, "run_id": "r", "passed": True, "setup": {f.name: getattr(SETUP, f.name) for f in OLD_SETUP}}
    summary = SUMMARY.decode(json.dumps(old).encode(), "summary.json")
    assert summary.version == 3 and summary.setup is not None and summary.setup.connect_ranks == 0
    assert summary.setup.slowest_s == 0.5 and "first collective" not in summary.setup.describe("nccl")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'{"run_id": "r", "launcher": "local", "world_si', "damaged run.json, not a JSON object"),
        (b"[1, 2]", "damaged run.json, not a JSON object: Expected `object`, got `array`"),
        (b'{"version": 2, "run_id": "r", "world_size": 2, "nodes": 1}', "missing required field `launcher`"),
        (
            b'{"version": 2, "run_id": "r", "launcher": "pbs", "world_size": 2, "nodes": 1}',
            "Invalid enum value 'pbs' - at `$.launcher`",
        ),
        (
            b'{"version": 2, "run_id": "r", "launcher": "local", "world_size": "two", "nodes": 1}',
            "Expected `int`, got `str` - at `$.world_size`",
        ),
        (
            b'{"run_id": "r", "launcher": "local", "world_size": "two", "nodes": 1}',
            "damaged run.json (format 1): Expected `int`, got `str` - at `$.world_size`",
        ),
    ],
)
def test_a_damaged_record_is_named_with_what_is_wrong(tmp_path: Path, data: bytes, reason: str) -> None:
    path = tmp_path / "run.json"
    path.write_bytes(data)
    with pytest.raises(RecordError) as caught:
        RUN.read(path)
    assert str(caught.value).startswith(f"{path}: ") and reason in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_missing_record_is_none_only_where_asked(tmp_path: Path) -> None:
    assert SUMMARY.read_if_any(tmp_path / "summary.json") is None
    with pytest.raises(FileNotFoundError):
        SUMMARY.read(tmp_path / "summary.json")


def test_run_json_is_made_and_updated_through_its_record(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "slurm")
    run.update_meta(run_id=run.run_id, launcher="slurm", world_size=4, nodes=2, task="isolate")
    run.update_meta(job_id="4242")
    meta = run.read_meta()
    assert (meta.launcher, meta.task, meta.job_id, meta.world_size) == (LauncherName.SLURM, "isolate", "4242", 4)
    assert f"{meta.launcher}" == "slurm" and meta.launcher == "slurm"
    assert find_run("4242", tmp_path).path == run.path
    with pytest.raises(RecordError, match=r"cannot set \['launcher'\]: Invalid enum value 'pbs'"):
        run.update_meta(launcher="pbs")
    assert run.read_meta().launcher is LauncherName.SLURM, "a refused update leaves the file as it was"


def test_an_exclusive_create_writes_once_and_never_over(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    assert create_exclusive(path, b"first\n") is True
    assert create_exclusive(path, b"second\n") is False
    assert path.read_bytes() == b"first\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"], "no temporary file left behind"
