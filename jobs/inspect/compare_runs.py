"""Whether two runs measure the same thing, for `collbench compare`: the same backend, device, GPU model and
world size. busbw of gloo on CPUs against NCCL on GPUs, or of an A100 against an H100, is two numbers, not a
regression; such runs are said to differ, one line, before anything is compared."""

from __future__ import annotations

from dataclasses import dataclass

from jobs.rundir.layout import RunDir, read_json
from jobs.rundir.records.config import load_run_config


@dataclass(frozen=True, slots=True)
class RunKind:
    """What a run's figures are figures of."""

    backend: str
    device: str
    gpu: str
    """Rank 0's GPU model; '' where it recorded none (a CPU run, an import that did not say)."""
    world_size: int


def kind_of(run: RunDir) -> RunKind:
    cfg = load_run_config(run)
    return RunKind(backend=cfg.backend, device=cfg.device, gpu=_gpu_name(run), world_size=run.read_meta().world_size)


def _gpu_name(run: RunDir) -> str:
    try:
        env = read_json(run.rank_env(0))
    except (OSError, ValueError):
        return ""
    gpu = env.get("gpu")
    return str(gpu.get("name") or "") if isinstance(gpu, dict) else ""


def differences(base: RunKind, cand: RunKind) -> list[str]:
    """'backend gloo vs nccl', ... for each way the two differ; a GPU model one side did not record is no
    difference."""
    found = [
        f"{what} {a} vs {b}"
        for what, a, b in (
            ("backend", base.backend, cand.backend),
            ("device", base.device, cand.device),
            ("world size", base.world_size, cand.world_size),
        )
        if a != b
    ]
    if base.gpu and cand.gpu and base.gpu != cand.gpu:
        found.append(f"GPU {base.gpu} vs {cand.gpu}")
    return found


def not_comparable(base: RunDir, cand: RunDir, prefix: str = "") -> str:
    """One line saying how the two runs differ, or '' where they measure the same thing."""
    found = differences(kind_of(base), kind_of(cand))
    if not found:
        return ""
    return f"{prefix}not comparable: {'; '.join(found)}: busbw of one is not a baseline for the other, nothing compared"
