"""config.yaml: the fully resolved config of the run, read back as the Config the ranks ran with."""

from __future__ import annotations

from omegaconf import OmegaConf

from jobs.config.model import Config, config_from_plain
from jobs.rundir.layout import RunDir


def load_run_config(run: RunDir) -> Config:
    data = OmegaConf.to_container(OmegaConf.load(run.config_file), resolve=True)
    assert isinstance(data, dict)
    return config_from_plain({str(k): v for k, v in data.items()})
