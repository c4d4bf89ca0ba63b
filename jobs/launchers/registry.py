"""Which launcher runs a config (`launcher:`) or a run directory (run.json's `launcher`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jobs.config.model import Config, ConfigError
from jobs.launchers.base import Launcher
from jobs.rundir.layout import RunDir


def _local() -> Launcher[Any]:
    from jobs.launchers.local import LocalLauncher

    return LocalLauncher()


def _slurm() -> Launcher[Any]:
    from jobs.launchers.slurm import SlurmLauncher

    return SlurmLauncher()


def _step() -> Launcher[Any]:
    from jobs.launchers.step import StepLauncher

    return StepLauncher()


def _imported() -> Launcher[Any]:
    from jobs.launchers.imported import ImportedLauncher

    return ImportedLauncher()


def _external() -> Launcher[Any]:
    from jobs.launchers.external import ExternalLauncher

    return ExternalLauncher()


LAUNCHERS: dict[str, Callable[[], Launcher[Any]]] = {
    "local": _local,
    "slurm": _slurm,
    "slurm-step": _step,
    "imported": _imported,
    "external": _external,
}
"""Name -> a new instance (imported on first use: the local launcher needs no Slurm, and the other way round)."""


def launcher_named(name: str) -> Launcher[Any]:
    try:
        return LAUNCHERS[name]()
    except KeyError:
        raise ConfigError(f"launcher: {name!r} is not a launcher; allowed: {', '.join(LAUNCHERS)}") from None


def launcher_for(cfg: Config) -> Launcher[Any]:
    return launcher_named(cfg.launcher)


def launcher_of(run: RunDir) -> Launcher[Any]:
    """The launcher that started the run (run.json's `launcher`)."""
    return launcher_named(str(run.read_meta().launcher))


def detached_launcher(cfg: Config) -> Launcher[Any]:
    """A launcher whose runs outlive this process (`submit`, `scale`, `isolate`), or ConfigError."""
    launcher = launcher_for(cfg)
    if not launcher.detached:
        detached = [name for name, make in LAUNCHERS.items() if make().detached]
        raise ConfigError(
            f"launcher: {cfg.launcher!r} cannot be submitted; use collbench run, or a config whose launcher "
            f"is one of {', '.join(detached)} (such as --config slurm)"
        )
    return launcher
