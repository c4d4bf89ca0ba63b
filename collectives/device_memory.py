"""How much memory a rank may use on its device: free GPU memory, or its share of the host's."""

from __future__ import annotations

import torch

from collectives.memory import host_available_bytes


def available_bytes(device: torch.device, ranks_sharing: int) -> tuple[int, str]:
    """Bytes this rank may use, and where the figure comes from."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return free, f"free memory on {device}"
    return host_available_bytes() // max(1, ranks_sharing), f"host MemAvailable / {ranks_sharing} ranks on this node"
