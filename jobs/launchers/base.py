"""One interface for every launcher, as torchx's `Scheduler`: the CLI asks it and never names a launcher.

A launcher builds a request apart from starting it (so a dry run prints exactly what would run), starts
it, describes many runs in one call, waits for them, cancels one, and says where its logs are.

A new launcher fits without touching the CLI, as the step launcher did (jobs.launchers.step,
"slurm-step", registered in jobs.launchers.registry): the ranks as one `srun` job step inside an
allocation the user already holds (`salloc`, a batch script calling `collbench check` or `run`):

- `build_request`: the `srun -v --nodes=N --ntasks-per-node=T --nodelist=... --kill-on-bad-exit=1 ...
  python -m submitit.core._submit FOLDER` command line (the same RankEntry pickled into FOLDER), its text
  the exact command; `check_can_start` checks SLURM_JOB_ID is set and the allocation offers `nodes` nodes;
- `start`: the run directory, then `srun` as a child process (a job step, id JOBID.STEP, read from srun
  -v's own words); `detached` is False, like the local launcher, since the step ends with this process;
- `describe`: the child process while it lives (`squeue --steps` for a step started elsewhere), then the
  ranks' statuses, as the local launcher;
- `wait`: a loop over the child process, up to the timeout; `cancel`: `scancel JOBID.STEP` (the step,
  never the allocation); `log_locations`: the ranks' logs and srun's stderr file.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

from jobs.config.model import Config
from jobs.launchers.live import Live
from jobs.launchers.runs import check_output_dir
from jobs.rundir.layout import RunDir
from jobs.rundir.records.slurm import JobFacts
from slurm.states import JobState, meaning

PayloadT = TypeVar("PayloadT")


@dataclass(frozen=True, slots=True)
class Request(Generic[PayloadT]):
    """What `start` will do, built once, without doing it: the dry run prints it, `start` carries it out."""

    cfg: Config
    """The config that starts: the one every check was made on."""
    run_path: Path
    """The run directory it will create (RunDir.new_path: not there yet)."""
    text: str
    """The exact script or command line: what a dry run prints."""
    payload: PayloadT
    """The launcher's own form of it (a slurm.submission.SlurmRequest, srun's argv, ...)."""


@dataclass(frozen=True, slots=True)
class Started:
    run: RunDir
    job_id: str
    """The launcher's id for it: a Slurm job id, the local controller's pid."""
    lines: tuple[str, ...]
    """What to tell the user (job id, run directory)."""


@dataclass(frozen=True, slots=True)
class RunState:
    """Where a run stands: one JobState whatever the launcher, and the launcher's own words for it."""

    job_id: str
    state: JobState
    words: str = ""
    """Slurm's words for it ('PENDING (Resources)', 'CANCELLED by 0', 'COMPLETING (NODE_FAIL)'); '' where
    the state says it all (local, slurm-step): `said` is then the state's name."""
    nodes: str = ""
    """The nodes it runs on ('n[1-2]'), '' when not known."""

    @property
    def said(self) -> str:
        """The state as the user reads it: Slurm's words, else 'RUNNING', 'COMPLETED', ..."""
        return self.words or self.state.name

    def meaning(self) -> str:
        """'ended FAILED', 'is RUNNING', 'is queued but will never start: PartitionNodeLimit'."""
        return meaning(self.state, self.said)


@dataclass(frozen=True, slots=True)
class WaitResult:
    state: RunState
    ranks_ended: bool
    """Every rank had recorded its end (ok, failed, stopped) or is known dead."""

    @property
    def still_running(self) -> bool:
        return not self.state.state.is_final and not self.ranks_ended


class Launcher(ABC, Generic[PayloadT]):
    name: ClassVar[str]
    detached: ClassVar[bool]
    """The run outlives this process (`collbench submit` returns at once); False: `run` waits for it here."""

    def launch(self, cfg: Config) -> Started:
        """The one way a run starts: every check once, the request built once, then that request started."""
        return self.start(self.prepare(cfg))

    def prepare(self, cfg: Config) -> Request[PayloadT]:
        """Every check, once, before any run directory exists (ConfigError: exit 2;
        slurm.submission.SlurmUnavailable: exit 3), then the request those checks were made for."""
        from jobs.history.hook import check_history  # SQLAlchemy only where a run starts

        check_output_dir(cfg.output_dir)
        self.check_can_start(cfg)
        check_history(cfg)
        return self.request(cfg, RunDir.new_path(cfg.output_dir, self.name))

    def request(self, cfg: Config, run_path: Path | None = None) -> Request[PayloadT]:
        """The request for a new run of `cfg` at `run_path`, built apart from starting it, without checks.
        A dry run leaves `run_path` out: the run id is only chosen by `prepare`, so the path says RUN_ID."""
        return self.build_request(cfg, run_path or Path(cfg.output_dir).expanduser().absolute() / "RUN_ID")

    @abstractmethod
    def check_can_start(self, cfg: Config) -> None:
        """This launcher's own refusals of what could never run (the output directory and the history are
        checked by `prepare` for every launcher)."""

    @abstractmethod
    def build_request(self, cfg: Config, run_path: Path) -> Request[PayloadT]:
        """The request for a run directory at `run_path`; it may derive the config it starts (a port)."""

    @abstractmethod
    def start(self, request: Request[PayloadT]) -> Started:
        """The request's run directory created and its ranks started; nothing is left behind if starting
        fails."""

    @abstractmethod
    def describe(self, runs: Sequence[RunDir]) -> list[RunState]:
        """Every run's state, in order, asked in one go however many there are."""

    @abstractmethod
    def wait(self, runs: Sequence[RunDir], timeout_s: float | None, live: Live | None) -> list[WaitResult]:
        """Wait for every run to end (or the timeout to pass), watching them all at once; `live` shows the
        progress of a single run. When it sees a run end it writes the run's final files (once)."""

    @abstractmethod
    def cancel(self, run: RunDir) -> str:
        """Stop the run; returns what was cancelled, in words."""

    @abstractmethod
    def log_locations(self, run: RunDir) -> list[Path]:
        """Where the run's logs are: each rank's, then the launcher's own."""

    def has_ended(self, run: RunDir) -> bool:
        return self.describe([run])[0].state.is_final

    def facts(self, run: RunDir, state: RunState) -> JobFacts | None:
        """What the launcher says now of the run's job (`state`, from describe) and its nodes, in memory,
        never saved: for `status` and `report`. None: nothing beyond the run directory."""
        return None
