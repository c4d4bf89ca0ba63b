"""The config's identity, its fingerprint: what the history keys comparable runs by and the suffix of the
Prometheus export's `config` label. One function, so one config has one name in both."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from jobs.config.model import Config, Faults
from jobs.config.schema import to_plain

NOT_IN_FINGERPRINT = ("output_dir", "history", "drain", "nodes", "ranks")
"""Config keys that do not change what is measured, or that the history keys by as columns of their own (the node
count and the world size): two runs that differ only in these share a fingerprint."""
SLURM_NOT_IN_FINGERPRINT = ("exclude", "nodelist", "job_name")
ISOLATE_NOT_IN_FINGERPRINT = ("from_history", "expected_from")
CHECK_NOT_IN_FINGERPRINT = ("node_keep_run", "node_record", "confirm_rounds")
"""Keys added after runs were recorded that change nothing measured: left out, so those runs still compare.
check.confirm_rounds does change a check's rounds, but a check's config carries it as isolate.confirm_rounds
(check_setup.check_config sets one from the other), which the fingerprint holds."""
JUDGED_NOT_MEASURED = {"expected_busbw": 0.0}
"""isolate keys that set what the pairs are judged against, not what they measure: held at their defaults, so
a run whose level came from the history (it moves with every healthy run) compares with the runs before it,
and a run that left them at their defaults keeps the fingerprint it had."""
CHECK_SEED_DEFAULT = 0
"""check mixes each allocation's job id into isolate.seed (check_plan.seed_for): which random partners a node
gets, an accident of scheduling. Held at the default for such a task (TaskSpec.seed_per_allocation), so one
check config is one series."""
MEASURED_ENV = ("NCCL_", "GLOO_", "UCX_")
"""The env variables that change what is measured; the others are left out."""
FAULT_RANKS = ("corrupt_rank", "fail_rank", "hang_rank", "slow_rank")
"""The faults that are injected when they name a rank (-1: none)."""


def injected_faults(faults: Faults) -> dict[str, int | float]:
    """The faults a run injects, as `faults.KEY` names them: each fault that names a rank, and slow_ms with
    slow_rank; empty for a run with none."""
    plain = asdict(faults)
    found: dict[str, int | float] = {key: plain[key] for key in FAULT_RANKS if plain[key] >= 0}
    if "slow_rank" in found:
        found["slow_ms"] = faults.slow_ms
    return found


def config_fingerprint(cfg: Config) -> str:
    """What was measured, in 12 hex digits: the config less where it ran and how big. The history's
    `config` column and the suffix of the Prometheus `config` label. The faults are in only when one is
    injected, so a faulted run never shares a healthy config's fingerprint and a healthy run keeps the one it
    had before faults counted."""
    plain = to_plain(cfg)
    for key in NOT_IN_FINGERPRINT:
        plain.pop(key, None)
    faults = injected_faults(cfg.faults)
    if faults:
        plain["faults"] = faults
    else:
        plain.pop("faults", None)
    for section, keys in (
        ("slurm", SLURM_NOT_IN_FINGERPRINT),
        ("isolate", ISOLATE_NOT_IN_FINGERPRINT),
        ("check", CHECK_NOT_IN_FINGERPRINT),
    ):
        for key in keys:
            plain.get(section, {}).pop(key, None)
    isolate = plain.get("isolate", {})
    isolate.update({key: value for key, value in JUDGED_NOT_MEASURED.items() if key in isolate})
    if cfg.spec.seed_per_allocation and "seed" in isolate:
        isolate["seed"] = CHECK_SEED_DEFAULT
    plain["env"] = {k: v for k, v in plain.get("env", {}).items() if k.startswith(MEASURED_ENV)}
    return hashlib.sha256(json.dumps(plain, sort_keys=True).encode()).hexdigest()[:12]
