"""The config's identity, its fingerprint: what the history keys comparable runs by and the suffix of the
Prometheus export's `config` label. One function, so one config has one name in both."""

from __future__ import annotations

import hashlib
import json

from jobs.config.model import Config
from jobs.config.schema import to_plain

NOT_IN_FINGERPRINT = ("output_dir", "history", "nodes", "ranks", "faults")
"""Config keys that do not change what is measured: two runs that differ only in these compare."""
SLURM_NOT_IN_FINGERPRINT = ("time_min", "exclude", "nodelist", "job_name", "comment")
ISOLATE_NOT_IN_FINGERPRINT = ("from_history", "expected_from")
"""Keys added after runs were recorded that change nothing measured: left out, so those runs still compare."""
MEASURED_ENV = ("NCCL_", "GLOO_", "UCX_")
"""The env variables that change what is measured; the others are left out."""


def config_fingerprint(cfg: Config) -> str:
    """What was measured, in 12 hex digits: the config less where it ran and how big. The history's
    `config` column and the suffix of the Prometheus `config` label."""
    plain = to_plain(cfg)
    for key in NOT_IN_FINGERPRINT:
        plain.pop(key, None)
    slurm = plain.get("slurm", {})
    for key in SLURM_NOT_IN_FINGERPRINT:
        slurm.pop(key, None)
    isolate = plain.get("isolate", {})
    for key in ISOLATE_NOT_IN_FINGERPRINT:
        isolate.pop(key, None)
    plain["env"] = {k: v for k, v in plain.get("env", {}).items() if k.startswith(MEASURED_ENV)}
    return hashlib.sha256(json.dumps(plain, sort_keys=True).encode()).hexdigest()[:12]
