"""The lines nccl-tests prints before its tables, from the run directory's env/rank-N.json records: the
versions the ranks ran with (collbench, torch, NCCL, CUDA, the driver) and each rank's host and device.
Read by `report` (above the tables) and by the terminal of a run waited for (jobs/inspect/live_table.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectives.table import RankPlace
from jobs.inspect.postmortem import rank_spans
from jobs.rundir.layout import RunDir, rank_files, rank_of
from jobs.rundir.records.rank import RankStatus

NOT_RECORDED = ("", "none")
"""What env/rank-N.json holds for a version the rank did not have (a CPU build's CUDA and NCCL)."""


@dataclass(frozen=True, slots=True)
class RankEnvironment:
    """What env/rank-N.json says of one rank, as the header shows it."""

    rank: int
    host: str
    collbench: str
    """'' in records written before collbench recorded its own version."""
    torch: str
    cuda: str
    nccl: str
    driver: str
    gpu_index: int = -1
    """-1: the rank ran on the CPU."""
    pci: str = ""
    """dddd:bb:dd, as nccl-tests prints it."""
    gpu_name: str = ""


def environment_of(rank: int, plain: Mapping[str, Any]) -> RankEnvironment:
    """One record as the rank wrote it (jobs/runtime/environment.py); a field it lacks is ''."""
    gpu = plain.get("gpu")
    gpu = gpu if isinstance(gpu, dict) else {}
    return RankEnvironment(
        rank=rank,
        host=str(plain.get("hostname", "")),
        collbench=str(plain.get("collbench", "")),
        torch=str(plain.get("torch", "")),
        cuda=str(plain.get("cuda", "")),
        nccl=str(plain.get("nccl", "")),
        driver=str(gpu.get("driver", "")),
        gpu_index=int(gpu.get("index", -1)),
        pci=str(gpu.get("pci_bus_id", "")).removesuffix(".0"),
        gpu_name=str(gpu.get("name", "")),
    )


def read_environments(run: RunDir) -> dict[int, RankEnvironment]:
    """rank -> its environment record, for every rank that wrote a readable one (a rank still writing its
    own, or one whose file is damaged, is left out: the header shows its status's device instead)."""
    found = {}
    for path in rank_files(run.env_dir, ".json"):
        plain = _read(path)
        if plain is not None:
            found[rank_of(path)] = environment_of(rank_of(path), plain)
    return found


def _read(path: Path) -> dict[str, Any] | None:
    try:
        plain = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return plain if isinstance(plain, dict) else None


def versions_line(environments: Mapping[int, RankEnvironment], backend: str) -> str:
    """`collbench version 0.1.0 torch 2.5.1 backend nccl NCCL 2.21.5 CUDA 12.4 driver 550.54.15` (without its
    '# '), or `... backend gloo device cpu` on the CPU; a version the ranks disagree on is rank 0's (or the
    lowest rank's) with the others' after it: `torch 2.5.1 (rank(s) 8-15: 2.4.0)`."""
    envs = [environments[rank] for rank in sorted(environments)]
    parts = ["collbench"]
    if any(env.collbench for env in envs):
        parts.append(f"version {_agreed(envs, 'collbench')}")
    parts += [f"torch {_agreed(envs, 'torch')}", f"backend {backend}"]
    if backend == "nccl":
        parts.append(f"NCCL {_agreed(envs, 'nccl')}")
    if any(env.gpu_index >= 0 for env in envs):
        parts += [f"CUDA {_agreed(envs, 'cuda')}", f"driver {_agreed(envs, 'driver')}"]
    elif envs:
        parts.append("device cpu")
    return " ".join(parts)


def _agreed(envs: Iterable[RankEnvironment], name: str) -> str:
    """The value every rank recorded, or the first rank's with the ranks that differ and theirs."""
    by_value: dict[str, list[int]] = {}
    for env in envs:
        value = getattr(env, name)
        by_value.setdefault("?" if value in NOT_RECORDED else value, []).append(env.rank)
    if not by_value:
        return "?"
    first, *others = by_value
    if not others:
        return first
    return first + " (" + "; ".join(f"rank(s) {rank_spans(by_value[value])}: {value}" for value in others) + ")"


def rank_places(statuses: Mapping[int, RankStatus], environments: Mapping[int, RankEnvironment]) -> list[RankPlace]:
    """Each rank with a status, with its GPU (index, PCI address, name) where its environment records one."""
    places = []
    for rank, status in sorted(statuses.items()):
        env = environments.get(rank)
        place = RankPlace(rank=rank, host=status.host, pid=status.pid, device=status.device)
        if env is not None and env.gpu_index >= 0:
            place = RankPlace(
                rank=rank, host=status.host, pid=status.pid, device=status.device,
                gpu_index=env.gpu_index, pci=env.pci, gpu_name=env.gpu_name,
            )  # fmt: skip
        places.append(place)
    return places


def header_lines(versions: str, places: Iterable[RankPlace]) -> list[str]:
    """The lines above the first table, '#' first as nccl-tests prints them: the versions, then every rank."""
    return [f"# {versions}", "#", "# Using devices", *(f"#{place.device_line()}" for place in places), "#"]
