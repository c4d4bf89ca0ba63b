"""Starting runs: the run directory, the config the ranks and the directory see, and Slurm submission."""

from __future__ import annotations

import os
import shutil
from typing import Any

from omegaconf import OmegaConf

from jobs.config import Config, ConfigError
from jobs.rundir import RunDir
from jobs.schema import to_plain


def public_config(cfg: Config) -> dict[str, Any]:
    """The config as the run directory and the ranks see it: secret-looking env values are exported
    into the environment the ranks inherit (local controller, or sbatch's --export=ALL) instead."""
    from jobs.environment import withhold_secrets

    public, secrets = withhold_secrets(to_plain(cfg))
    os.environ.update(secrets)
    return public


def new_run(cfg: Config, public: dict[str, Any]) -> RunDir:
    """A new run directory holding `public` (public_config(cfg)) as its config.yaml."""
    run = RunDir.create(cfg.output_dir, cfg.launcher)
    run.config_file.write_text(OmegaConf.to_yaml(OmegaConf.create(public)), encoding="utf-8")
    run.update_meta(run_id=run.run_id, launcher=cfg.launcher, world_size=cfg.world_size, nodes=cfg.nodes)
    return run


def require_slurm(cfg: Config) -> None:
    if cfg.launcher != "slurm":
        raise ConfigError(
            f"launcher: {cfg.launcher!r} cannot be submitted; use collbench run, or a Slurm config "
            "(--config slurm) or launcher=slurm"
        )


def submit_new_run(cfg: Config) -> tuple[RunDir, str]:
    """A new run directory and its Slurm job; if sbatch refuses, the directory is removed again."""
    from jobs.launch_slurm import submit_run

    public = public_config(cfg)
    run = new_run(cfg, public)
    try:
        job_id = submit_run(cfg, public, run)
    except BaseException:
        shutil.rmtree(run.path, ignore_errors=True)
        raise
    return run, job_id
