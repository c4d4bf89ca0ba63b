"""The config fingerprint: everything that changes what is measured and nothing that does not; the faults in
only when one is injected, so every healthy config keeps the fingerprint it had."""

from __future__ import annotations

import pytest

from jobs.config.fingerprint import NOT_IN_FINGERPRINT, config_fingerprint, injected_faults
from jobs.config.model import load_config
from jobs.config.schema import to_plain

RECORDED = {
    (None, ()): "cec257ead1b9",
    ("testcluster", ()): "fd50ba79895c",
    ("ib-h100", ()): "21bffa669b56",
    ("slurm", ()): "513dad9b2b18",
    ("testcluster", ("task=isolate", "nodes=4")): "9e5642527bf3",
}
"""The fingerprints these configs had before faults counted (collbench at 5ef04cd): runs recorded with them
must still compare with new ones."""


def _fingerprint(config: str | None = None, *overrides: str) -> str:
    return config_fingerprint(load_config(config, list(overrides)))


@pytest.mark.parametrize(("config", "overrides"), list(RECORDED))
def test_a_healthy_config_keeps_the_fingerprint_it_had(config: str | None, overrides: tuple[str, ...]) -> None:
    assert _fingerprint(config, *overrides) == RECORDED[(config, overrides)]


def test_an_injected_fault_is_in_the_fingerprint_and_each_fault_is_its_own() -> None:
    healthy = _fingerprint(None, "ranks=3")
    faulted = {
        _fingerprint(None, "ranks=3", "faults.slow_rank=1", "faults.slow_ms=50"),
        _fingerprint(None, "ranks=3", "faults.slow_rank=1", "faults.slow_ms=100"),
        _fingerprint(None, "ranks=3", "faults.slow_rank=2", "faults.slow_ms=50"),
        _fingerprint(None, "ranks=3", "faults.corrupt_rank=1"),
        _fingerprint(None, "ranks=3", "faults.fail_rank=1"),
        _fingerprint(None, "ranks=3", "faults.hang_rank=1"),
    }
    assert len(faulted) == 6 and healthy not in faulted
    assert _fingerprint(None, "ranks=3", "faults.slow_ms=50") == healthy, "slow_ms alone slows no rank"


def test_injected_faults_name_each_fault_set() -> None:
    assert injected_faults(load_config(None, []).faults) == {}
    cfg = load_config(None, ["ranks=3", "faults.slow_rank=1", "faults.slow_ms=50", "faults.corrupt_rank=0"])
    assert injected_faults(cfg.faults) == {"corrupt_rank": 0, "slow_rank": 1, "slow_ms": 50.0}


@pytest.mark.parametrize(
    "override",
    ["ranks=3", "output_dir=elsewhere", "history.cluster=prod", "history.record=false", "env.OMP_NUM_THREADS=4"],
)  # fmt: skip
def test_what_does_not_change_the_measurement_leaves_the_fingerprint_alone(override: str) -> None:
    assert _fingerprint(None, override) == _fingerprint(None)


def test_nodes_and_slurm_placement_leave_the_fingerprint_alone() -> None:
    base = _fingerprint("testcluster")
    assert _fingerprint("testcluster", "nodes=3") == base
    assert _fingerprint("testcluster", "slurm.nodelist=n[1-2]", "slurm.exclude=n3", "slurm.job_name=x") == base


@pytest.mark.parametrize(
    "override",
    ["bench.iters=21", "bench.warmup_iters=2", "bench.dtype=float64", "bench.max_bytes=8M", "bench.ops=[all_gather]",
     "bench.average=min", "bench.timer=loop", "bench.reduce_op=max", "env.NCCL_ALGO=Ring", "env.GLOO_SOCKET_IFNAME=lo",
     "env.UCX_TLS=rc", "faults.corrupt_rank=1"],
)  # fmt: skip
def test_what_changes_the_measurement_changes_the_fingerprint(override: str) -> None:
    assert _fingerprint(None, override) != _fingerprint(None)


@pytest.mark.parametrize("override", ["slurm.partition=other", "slurm.tasks_per_node=4", "launcher=slurm-step"])
def test_where_and_how_slurm_places_the_ranks_changes_the_fingerprint(override: str) -> None:
    assert _fingerprint("testcluster", override) != _fingerprint("testcluster")


def test_every_top_level_key_is_decided() -> None:
    """A new section of the config is either in the fingerprint or named out of it, never in by accident."""
    sections = set(to_plain(load_config(None, [])))
    inside = {"task", "launcher", "backend", "device", "env", "bench", "timeouts", "rendezvous", "slurm", "faults",
              "fabric", "isolate", "check", "exports", "rails", "topology"}  # fmt: skip
    assert sections == inside | set(NOT_IN_FINGERPRINT)


def test_a_level_from_the_history_and_a_checks_job_seed_leave_the_fingerprint_alone() -> None:
    """What a check's pairs are judged against (a level that moves with every healthy run) and which random
    partners its job id gave them: one check config is one series for the history and a node's drift."""
    check = ("task=isolate", "isolate.mode=check", "nodes=4", "launcher=slurm", "ranks=null")
    assert _fingerprint(None, *check, "isolate.seed=1001") == _fingerprint(None, *check, "isolate.seed=1002")
    assert _fingerprint(None, *check, "isolate.expected_busbw=0.41") == _fingerprint(None, *check)
    pairs = ("task=isolate", "isolate.mode=random", "nodes=4", "launcher=slurm", "ranks=null")
    assert _fingerprint(None, *pairs, "isolate.seed=7") != _fingerprint(None, *pairs), "random pairs: the seed counts"
