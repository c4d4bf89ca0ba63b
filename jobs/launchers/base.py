"""One interface for every launcher, as torchx's `Scheduler`: the CLI asks the launcher its config names
(jobs.launchers.registry; collbench check derives a config with launcher slurm-step, check --node one
with local) and never imports a launcher.

One way to start a run, whatever the launcher and whatever the command:

- `request(cfg)`: the request built apart from starting it, typed per launcher (`Request[PayloadT]`: an
  sbatch request, srun's argv, the local command); a dry run prints its text, with RUN_ID for the run id,
  after `check_offline`: every check the real start makes short of asking Slurm or connecting to the
  history, so a dry run refuses what the real run would refuse;
- `prepare(cfg)`: every check once, before any run directory exists (`check_offline`: the output
  directory, the history's URL and its directory, the launcher's `check_here`; then the launcher's
  `check_can_start`, which may ask Slurm; then the history opened at its schema), then the request those
  checks were made for, at the run directory it will create (RunDir.new_path);
- `start(request)`: that request carried out: its run directory, then its ranks; nothing is left behind if
  starting fails;
- `launch(cfg)`: `start(prepare(cfg))`, what `run`, `submit`, `isolate`, `check` and `check --node` call
  (`scale` prepares every node count's request before it starts any).

Then a launcher describes many runs in one call, waits for them (ending each run once it sees it end:
jobs.launchers.run_end), cancels one, and says where its logs are. The local and step launchers run their
ranks as this process's child and share one wait loop (jobs.launchers.children); the Slurm launcher's
runs outlive this process and are waited for by jobs.launchers.watcher.
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

        self.check_offline(cfg)
        self.check_can_start(cfg)
        check_history(cfg)
        return self.request(cfg, RunDir.new_path(cfg.output_dir, self.name))

    def check_offline(self, cfg: Config) -> None:
        """Every check of `prepare` that asks nobody, made by dry runs too: the output directory can be
        written or created; the history's URL is one collbench can use (scheme, no password) and an SQLite
        file's directory exists (or history.create_dir); the launcher's own `check_here`. Creates nothing."""
        check_output_dir(cfg.output_dir)
        if cfg.history.record:
            from jobs.history.hook import check_history_place  # SQLAlchemy only where the history is used

            check_history_place(cfg)
        self.check_here(cfg)

    def request(self, cfg: Config, run_path: Path | None = None) -> Request[PayloadT]:
        """The request for a new run of `cfg` at `run_path`, built apart from starting it (`prepare` made
        the checks). A dry run leaves `run_path` out: its checks are `check_offline`, the ones that ask
        nobody, and the path says RUN_ID, since the run id is only chosen by `prepare`."""
        if run_path is None:
            self.check_offline(cfg)
        return self.build_request(cfg, run_path or Path(cfg.output_dir).expanduser().absolute() / "RUN_ID")

    def check_here(self, cfg: Config) -> None:
        """This launcher's own refusals that need nothing but this machine (its memory, the allocation's
        variables): made by dry runs too. None unless a launcher says; those that ask Slurm go in
        `check_can_start`."""

    def check_can_start(self, cfg: Config) -> None:
        """This launcher's own refusals that ask Slurm whether the request could ever run: made by `prepare`
        alone, never by a dry run (the output directory and the history are checked for every launcher).
        None unless a launcher says."""

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

    def facts_now(self, run: RunDir) -> JobFacts | None:
        """`facts` with the state asked now: what the readers (`report`, `isolate report`) render with."""
        return self.facts(run, self.describe([run])[0])
