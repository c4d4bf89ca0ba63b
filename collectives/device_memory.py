"""How much memory a rank may use on its device: free GPU memory less room for NCCL, or its share of the host's."""

from __future__ import annotations

import torch

from collectives.memory import host_available_bytes

NCCL_ROOM_BYTES = 4 << 30
"""Left free on a GPU for what NCCL allocates itself, outside torch, once its communicators connect (the
guard runs before the process group exists): reported at 0.5 to 0.7 GB per communicator on A100s and 1.6 GB
after an all_reduce (NVIDIA/nccl issues 964, 864), and from 1.06 to 4.34 GB after one all_to_all on 8
H100s (issue 1685)."""


def available_bytes(device: torch.device, ranks_sharing: int) -> tuple[int, str]:
    """Bytes this rank may use, and where the figure comes from."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        room = f"{NCCL_ROOM_BYTES / 1e9:.2f} GB left for NCCL's own buffers"
        return max(0, free - NCCL_ROOM_BYTES), f"free memory on {device} less {room}"
    return host_available_bytes() // max(1, ranks_sharing), f"host MemAvailable / {ranks_sharing} ranks on this node"
