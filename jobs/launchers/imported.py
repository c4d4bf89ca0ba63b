"""`launcher: imported`: a run directory `collbench import` made from nccl-tests' output, so that report,
compare, history and the exports read an nccl-tests run as they read collbench's own.

No rank ran here, so this launcher starts nothing and waits for nothing; what it writes is what the ranks
and the launcher would have written: run.json (launcher imported, the files read), config.yaml (the
nccl-tests run's parameters as a collbench config), one status, env and results file per rank, then the
final files (summary.json, nccl-tests/, table.txt) through the same writer as every run. It sits with the
launchers because, like them, it makes a run directory; the parsing is jobs.imports', which writes nothing.

Its label (backend, device, versions) is what the files say (jobs/imports/label.py), in run.json's
imported_as; config.yaml keeps nccl on cuda where they do not say, as a config must name both. The same
files imported again into the same output_dir are found by their digest (run.json's imported_digest) and
not written twice.

The directory is written whole under a scratch folder in output_dir and renamed into place last, so a
failure leaves nothing half-made behind; output_dir is locked meanwhile (flock on the directory itself,
nothing left behind), so two imports of the same files at once make one run."""

from __future__ import annotations

import dataclasses
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from collectives.results import RankResult, placement_name
from collectives.settings import BenchSettings
from jobs.config.model import Config, ConfigError, config_from_plain, to_yaml
from jobs.config.schema import to_plain
from jobs.ending.summary import record_summary
from jobs.imports import deviation
from jobs.imports.model import DTYPE_OF, Row, Table
from jobs.imports.read import Job
from jobs.inspect.report import assess
from jobs.launchers.base import RunState, WaitResult
from jobs.launchers.children import ended_state
from jobs.launchers.live import Live
from jobs.launchers.recorded import RecordedLauncher
from jobs.launchers.runs import check_output_dir
from jobs.rundir.layout import RunDir
from jobs.rundir.records.codec import RecordError
from jobs.rundir.records.config import load_run_config
from jobs.rundir.records.rank import STATUS, RankState, RankStatus
from jobs.rundir.records.run import UNKNOWN, LauncherName
from jobs.rundir.writing import write_json_atomic
from slurm.hostlist import collect_hostlist

NAME = "imported"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
"""nccl-tests' JSON start_time and end_time (local time)."""


class ImportedLauncher(RecordedLauncher):
    """The launcher of an imported run: it has ended, from its ranks' statuses, and nothing can be started,
    waited for or cancelled."""

    name = NAME
    detached = False
    recorded_by = "`collbench import` records for a run made from nccl-tests' output"

    def describe(self, runs: Sequence[RunDir]) -> list[RunState]:
        return [ended_state(run, "", _hostlist(run)) for run in runs]

    def wait(self, runs: Sequence[RunDir], timeout_s: float | None, live: Live | None) -> list[WaitResult]:
        return [WaitResult(state=state, ranks_ended=True) for state in self.describe(runs)]

    def cancel(self, run: RunDir) -> str:
        raise ConfigError(f"run {run.run_id} was imported from nccl-tests' output; nothing runs to cancel")

    def log_locations(self, run: RunDir) -> list[Path]:
        return []


def _hostlist(run: RunDir) -> str:
    from jobs.inspect.report import read_statuses

    hosts = sorted({status.host for status in read_statuses(run).values()})
    return collect_hostlist(hosts) if hosts else ""


@dataclass(frozen=True, slots=True)
class Imported:
    """The run directory an import made, or found: `earlier` when the same files were imported before."""

    run: RunDir
    earlier: bool


def import_run(job: Job, output_dir: str, sources: Sequence[str]) -> Imported:
    """The run directory of `job` under output_dir, written whole and renamed into place last; or the one
    an earlier import of the same files (the same digest, read as the same ops) made there, nothing written."""
    check_output_dir(output_dir)
    parent = Path(output_dir).expanduser().resolve()
    parent.mkdir(parents=True, exist_ok=True)
    cfg = _config(job, str(parent))
    with _locked(parent):
        earlier = find_imported(parent, job.digest, cfg.bench.ops)
        if earlier is not None:
            return Imported(run=earlier, earlier=True)
        return Imported(run=_write_run(job, cfg, parent, sources), earlier=False)


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive flock on the folder itself, held while looking for an earlier import and writing."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def find_imported(output_dir: Path, digest: str, ops: Sequence[str]) -> RunDir | None:
    """The run directory of launcher imported under output_dir whose files had this digest and were read as
    these ops (the same files read with another --op are another run); None if there is none. Runs that
    cannot be read, and runs imported before run.json kept a digest, are passed over."""
    for path in sorted(output_dir.glob(f"*-{NAME}-*")):
        run = RunDir(path)
        try:
            meta = run.read_meta()
        except (OSError, RecordError):
            continue
        if meta.launcher is LauncherName.IMPORTED and meta.imported_digest == digest and _ops(run) == list(ops):
            return run
    return None


def _ops(run: RunDir) -> list[str] | None:
    """The ops in the run's config.yaml; None where it cannot be read."""
    try:
        return list(load_run_config(run).bench.ops)
    except Exception:  # a damaged config.yaml (yaml's, OmegaConf's, ConfigError): not the earlier import
        return None


def _write_run(job: Job, cfg: Config, parent: Path, sources: Sequence[str]) -> RunDir:
    scratch = Path(tempfile.mkdtemp(prefix=".collbench-import-", dir=parent))
    try:
        run = RunDir.create(scratch, NAME)
        run.config_file.write_text(to_yaml(cfg), encoding="utf-8")
        run.update_meta(
            run_id=run.run_id, launcher=LauncherName.IMPORTED, world_size=cfg.world_size, nodes=cfg.nodes,
            task="sweep", imported_from=list(sources),
            imported_as=dataclasses.asdict(job.label.imported_as), imported_digest=job.digest,
        )  # fmt: skip
        _write_ranks(run, job, _mtime(sources))
        record_summary(run, assess(run), job_over=True)
        final = parent / run.path.name
        os.rename(run.path, final)
        return RunDir(final)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _config(job: Job, output_dir: str) -> Config:
    """The nccl-tests run's parameters as a collbench config (validated as config.yaml will be read): its
    backend and device as the files say, nccl and cuda where they do not (run.json's imported_as says
    unknown)."""
    first = job.tables[0]
    said = job.label.imported_as
    rows = [row for table in job.tables for row in table.rows]
    roots = {row.root for row in rows if row.root >= 0}
    reduce_ops = [row.redop for row in rows if row.redop != "none"]
    sizes = [row.size for row in rows]
    bench = BenchSettings(
        ops=list(dict.fromkeys(table.op for table in job.tables)),  # type: ignore[misc]
        min_bytes=max(1, min(first.min_bytes or min(sizes), min(sizes))),
        max_bytes=max(first.max_bytes, max(sizes)),
        step_factor=first.step_factor if not first.step_bytes and first.step_factor > 1 else 2.0,
        step_bytes=first.step_bytes,
        dtype=DTYPE_OF[rows[0].type],  # type: ignore[arg-type]
        reduce_op=reduce_ops[0] if reduce_ops else "sum",  # type: ignore[arg-type]
        root=roots.pop() if len(roots) == 1 else "all" if roots else 0,
        warmup_iters=first.warmup_iters,
        iters=max(1, first.iters),
        cuda_graph_launches=first.graph,
        per_iteration=any(row.times_us for row in rows),
        report_cputime=first.cputime,
        check=first.validation,
    )
    hosts = dict.fromkeys(device.host for device in job.devices)
    plain = to_plain(
        Config(launcher="imported", ranks=len(job.devices), nodes=len(hosts),
               backend="nccl" if said.backend == UNKNOWN else said.backend,  # type: ignore[arg-type]
               device="cuda" if said.device == UNKNOWN else said.device,  # type: ignore[arg-type]
               output_dir=output_dir, bench=bench)
    )  # fmt: skip
    plain["env"] = dict(_variables(first))
    try:
        return config_from_plain(plain)
    except ConfigError as error:
        raise ConfigError(f"{first.where}: the run's parameters do not make a collbench config: {error}") from None


def _variables(table: Table) -> list[tuple[str, str]]:
    pairs = [item.partition("=") for item in table.env]
    return [(name, value) for name, sep, value in pairs if sep and name.replace("_", "a").isalnum()]


def _epoch(text: str, fallback: float) -> float:
    try:
        return time.mktime(time.strptime(text, TIME_FORMAT))
    except ValueError:
        return fallback


def _mtime(sources: Sequence[str]) -> float:
    """When the output was written, where it does not say: its oldest file's modification time."""
    times = []
    for source in sources:
        try:
            times.append(Path(source).stat().st_mtime)
        except OSError:
            continue
    return min(times, default=time.time())


def _write_ranks(run: RunDir, job: Job, written: float) -> None:
    first = job.tables[0]
    started = _epoch(first.started, written)
    ended = _epoch(job.tables[-1].ended, started)
    error = _why_failed(job)
    rows = sum(len(t.rows) for t in job.tables)
    variables, said = dict(_variables(first)), job.label.imported_as
    on_cpu = said.device == "cpu"
    local_ranks: dict[str, int] = {}
    world = len(job.devices)
    node_rank = {host: i for i, host in enumerate(dict.fromkeys(d.host for d in job.devices))}  # as hosts appear
    for rank, device in enumerate(job.devices):
        local_rank = local_ranks[device.host] = local_ranks.get(device.host, -1) + 1
        status = RankStatus(
            rank=rank, host=device.host, pid=device.pid, device=_device_word(device.device, on_cpu),
            state=RankState.FAILED if error else RankState.OK, started=started, updated=ended,
            local_rank=local_rank, node_rank=node_rank[device.host], rows=rows, failed_at=ended if error else 0.0,
            error=error,
        )  # fmt: skip
        STATUS.write(run.rank_status(rank), status)
        bus = f"{device.bus_id}.0" if device.bus_id else ""
        write_json_atomic(
            run.rank_env(rank),
            {
                "hostname": device.host, "torch": said.torch_version, "cuda": said.cuda_version,
                "nccl": said.nccl_version,
                "gpu": None if on_cpu else {"index": device.device if device.device is not None else -1,
                                            "name": device.name, "pci_bus_id": bus},
                "variables": variables, "imported": True,
            },
        )  # fmt: skip
        placed = Placed(rank=rank, local_rank=local_rank, host=device.host, world=world, at=started, on_cpu=on_cpu)
        lines = [
            _result(table, row, placed).to_json() + "\n"
            for table in job.tables
            if table.process in (None, rank)
            for row in table.rows
        ]
        run.rank_results(rank).write_text("".join(lines), encoding="utf-8")


def _why_failed(job: Job) -> str:
    """Every rank's error, in words: the output cut short, the old layout's rows beyond their tolerance
    (nccl-tests' own verdict: that layout printed no count of wrong elements to carry); '' where none."""
    why = []
    if job.cut:
        why.append(f"imported: nccl-tests' output was cut short ({'; '.join(job.cut)}); the rows before it are kept")
    beyond = [row for table in job.tables for row in table.rows if row.beyond_tolerance]
    if beyond:
        shown = "; ".join(f"{row.size} B {placement_name(row.in_place)} at {row.where}: {deviation.said(row)}"
                          for row in beyond[:3])  # fmt: skip
        why.append(
            f"imported: {len(beyond)} row(s) wrong as nccl-tests judged them, by the old layout's error column (the "
            f"largest deviation, not a count; #wrong N/A there): {shown}{' ...' if len(beyond) > 3 else ''}"
        )
    return "; ".join(why)


def _device_word(index: int | None, on_cpu: bool) -> str:
    """The rank's device as a status names it: cpu, cuda:D, or cuda where the index is not said."""
    if on_cpu:
        return "cpu"
    return f"cuda:{index}" if index is not None else "cuda"


@dataclass(frozen=True, slots=True)
class Placed:
    """Where a rank of the imported run ran, as its results lines say."""

    rank: int
    local_rank: int
    host: str
    world: int
    at: float
    on_cpu: bool


def _result(table: Table, row: Row, placed: Placed) -> RankResult:
    """One rank's line for one table row: nccl-tests' figures are over every rank, so each rank carries the
    row's time (their mean is the table's), and rank 0 the row's #wrong (nccl-tests does not say whose). The
    timer is nccl-tests' loop timer: one clock around all iterations, CUDA's on GPUs, the host's on the CPU.
    A process that ran alone (nranks 1) carries its own rows in a group of its own, never averaged with
    another's."""
    rank, world = placed.rank, placed.world
    times = row.per_process[rank] if len(row.per_process) == world else row.times_us
    alone = table.process is not None
    wrong = row.wrong if row.wrong < 0 or rank == 0 or alone else 0
    return RankResult(
        op=table.op, size=row.size, count=row.count, dtype=DTYPE_OF[row.type], redop=row.redop, root=row.root,
        in_place=row.in_place, rank=rank, local_rank=placed.local_rank, host=placed.host,
        nranks=1 if alone else world, iters=table.iters, time_us=row.time_us, algbw=row.algbw, busbw=row.busbw,
        wrong=wrong, times_us=list(times), timer="host_loop" if placed.on_cpu else "cuda_loop",
        requested_size=row.size, started_at=placed.at, ended_at=placed.at,
        group=f"process {rank} alone (nranks 1)" if alone else "", members=[rank] if alone else [],
    )  # fmt: skip
