"""The config's `fabric` section."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

NetworkRequirement = Literal["any", "ib", "socket"]


@dataclass(kw_only=True, slots=True)
class FabricSettings:
    nccl_info: bool = False
    """Have NCCL print its transport choices into logs/nccl-rank-N.log (NCCL_DEBUG=INFO,
    NCCL_DEBUG_SUBSYS=INIT,NET unless env sets them), for the report's fabric section."""
    require_network: NetworkRequirement = "any"
    """Fail the run unless every rank's NCCL network is this: ib (IB or an IB plugin such as IBext_v8),
    socket, or any."""
    require_gdr: bool = False
    """Fail the run unless every rank that reaches the network does so with GPUDirect RDMA (/GDRDMA)."""
    max_port_errors: int = -1
    """Fail the run if an RDMA port's error counters grew by more than this during the job; -1: not checked."""
    line_gbps: float = 0.0
    """The line rate a rank's traffic crosses, in Gb/s, for judging a run slow as a whole; 0 reads it from
    the nodes' sysfs (RDMA port rate, or the speed of GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME), which a rank
    in a network namespace or container may not see."""
    sysfs_root: str = "/sys"
    """Where the kernel's sysfs is mounted (another path in a container, or a fake tree in tests)."""

    @property
    def needs_nccl_log(self) -> bool:
        return self.require_network != "any" or self.require_gdr
