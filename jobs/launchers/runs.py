"""Starting runs, whatever the launcher: the run directory and the config the ranks and the directory see."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from jobs.config.model import Config, ConfigError
from jobs.config.schema import to_plain
from jobs.rundir.layout import RunDir


def public_config(cfg: Config) -> dict[str, Any]:
    """The config as the run directory and the ranks see it: secret-looking env values are exported
    into the environment the ranks inherit (local controller, or sbatch's --export=ALL) instead."""
    from jobs.config.secrets import withhold_secrets

    public, secrets = withhold_secrets(to_plain(cfg))
    os.environ.update(secrets)
    return public


def new_run(cfg: Config, public: dict[str, Any], path: Path) -> RunDir:
    """The new run directory at `path` holding `public` (public_config(cfg)) as its config.yaml."""
    try:
        run = RunDir.create_at(path)
    except FileExistsError:
        raise ConfigError(f"output_dir: {str(path)!r} exists already; another run took its name, start again") from None
    run.config_file.write_text(OmegaConf.to_yaml(OmegaConf.create(public)), encoding="utf-8")
    run.update_meta(run_id=run.run_id, launcher=cfg.launcher, world_size=cfg.world_size, nodes=cfg.nodes, task=cfg.task)
    return run


def check_output_dir(output_dir: str) -> None:
    """output_dir must be a directory this process can write, or creatable: said before anything starts."""
    path = Path(output_dir).expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"output_dir: {str(path)!r} is not a directory; allowed: a writable directory or a new path")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise ConfigError(f"output_dir: {str(path)!r} lies under {str(existing)!r}, which is not a directory")
    try:  # root ignores permission bits, not a read-only mount: try for real
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".collbench-probe-"):
            pass
    except OSError as error:
        raise ConfigError(
            f"output_dir: {str(path)!r} cannot be written ({error.strerror} in {str(existing)!r}); "
            "allowed: a writable directory"
        ) from None


def start_new_run(cfg: Config, path: Path, start: Callable[[dict[str, Any], RunDir], str]) -> tuple[RunDir, str]:
    """A request's run directory at `path` and `start(public_config, run)`'s job id; if starting fails,
    the directory is removed again, so a refusal leaves nothing behind."""
    public = public_config(cfg)
    run = new_run(cfg, public, path)
    try:
        job_id = start(public, run)
    except BaseException:
        shutil.rmtree(run.path, ignore_errors=True)
        raise
    return run, job_id
