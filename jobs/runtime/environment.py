"""What each rank runs on, captured at its start: host, versions, GPU, and the variables that steer
NCCL, gloo, torch and Slurm. Anything whose name suggests a secret is redacted before it is written."""

from __future__ import annotations

import os
import platform
import re
import socket
from collections.abc import Mapping
from typing import Any

from jobs.config.secrets import REDACTED, is_secret_name

CAPTURED_PREFIXES = ("NCCL_", "GLOO_", "TORCH_", "SLURM_", "CUDA_", "NVIDIA_", "UCX_", "FI_", "OMP_", "MASTER_")


def captured_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables worth comparing across ranks, secrets redacted."""
    return {
        name: (REDACTED if is_secret_name(name) else value)
        for name, value in sorted(environ.items())
        if name.upper().startswith(CAPTURED_PREFIXES)
    }


def capture_environment(device_type: str, local_rank: int) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "collbench": _collbench_version(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "none",
        "nccl": _nccl_version(torch),
        "gpu": _gpu(torch, local_rank) if device_type == "cuda" else None,
        "torch_threads": torch.get_num_threads(),
        "variables": captured_variables(os.environ),
    }
    return info


def _collbench_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("collbench")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def _nccl_version(torch: Any) -> str:
    try:
        version = torch.cuda.nccl.version()
    except Exception:  # CPU builds have no NCCL
        return "none"
    return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)


def _gpu(torch: Any, local_rank: int) -> dict[str, Any]:
    props = torch.cuda.get_device_properties(local_rank)
    bus: list[int] = [int(getattr(props, name, -1)) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    domain, bus_id, device = bus
    return {
        "index": local_rank,
        "name": props.name,
        "uuid": str(getattr(props, "uuid", "")),
        "pci_bus_id": f"{domain:04x}:{bus_id:02x}:{device:02x}.0" if min(bus) >= 0 else "",
        "memory_bytes": int(props.total_memory),
        "driver": _driver_version(),
    }


def _driver_version() -> str:
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as handle:
            first = handle.readline()
    except OSError:
        return ""
    match = re.search(r"Kernel Module\s+([\d.]+)", first)
    return match.group(1) if match else first.strip()
