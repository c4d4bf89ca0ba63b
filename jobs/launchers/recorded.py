"""A launcher that only reads: the runs collbench records but never starts (imported, external)."""

from __future__ import annotations

from pathlib import Path

from jobs.config.model import Config, ConfigError
from jobs.launchers.base import Launcher, Request, Started


class RecordedLauncher(Launcher[None]):
    """Nothing can be started with it: its refusal says what records runs under its name."""

    recorded_by = ""
    """What records a run under this launcher's name, for the one-line refusal."""

    def check_here(self, cfg: Config) -> None:
        raise ConfigError(
            f"launcher: '{self.name}' is what {self.recorded_by}; nothing can be started with it; "
            "allowed: local, slurm, slurm-step"
        )

    def build_request(self, cfg: Config, run_path: Path) -> Request[None]:
        self.check_here(cfg)
        raise AssertionError("unreachable")

    def start(self, request: Request[None]) -> Started:
        self.check_here(request.cfg)
        raise AssertionError("unreachable")
