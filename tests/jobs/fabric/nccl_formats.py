"""NCCL_DEBUG=INFO logs of a realistic job, written with NCCL's own format strings per version.

Each string below is NCCL's printf format from the source of that version (src/debug.cc for the prefix,
init.cc, transport/net.cc, net_ib.cc, net_socket.cc, p2p.cc, shm.cc, coll_net.cc, graph/paths.cc,
graph/topo.cc), filled in the way NCCL fills it. The job: 2 nodes x 8 GPUs, one HCA per GPU, ranks 0-7 on
n1 and 8-15 on n2; a ring inside each node over P2P, the node boundary over the network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

NODES = ("n1", "n2")
GPUS = 8
BUS_IDS = (0x1B000, 0x1C000, 0x3D000, 0x3E000, 0x9F000, 0xA0000, 0xC1000, 0xC2000)


@dataclass(frozen=True)
class Profile:
    version: str
    cuda: str = "12.2"
    bus_ids: bool = False
    """Peers in brackets by bus id (%lx), before 2.18; by NVML device index after."""
    conn_index: bool = True
    """Channel lines with /connIndex (from 2.14)."""
    relaxed_ordering: bool = True
    """'[RO]' in the IB device line (from 2.12)."""
    shape_line: bool = False
    """'nRanks %d nNodes %d localRanks %d' (from 2.21)."""
    init_prefix: str = ""
    """The function name before 'comm %p ... Init COMPLETE' (2.21: ncclCommInitRank; 2.23+: job->funcName)."""
    p2p: str = "P2P/CUMEM/read"
    shm: str = "SHM/direct/direct"
    hca_gdr_line: str = "topo"
    """'no module' (2.10: NET/IB : GPU Direct RDMA Disabled for HCA %d '%s' (no module)) or topo (2.18+)."""
    path_gdr_by_rank: bool = False
    """2.27 names the GPU by rank in 'GPU Direct RDMA Enabled for GPU %d / HCA %lx'."""
    timestamp: str = ""
    """NCCL_DEBUG_TIMESTAMP_FORMAT output before the prefix (2.23+), e.g. '[2026-12-03 10:00:00] '."""
    network: str = "IB"
    link_layer: str = "IB"
    gdr: bool = True
    completion_warning: str = (
        "NET/IB : Got completion from peer {peer}<45678> with error 12, opcode 0, len 0, vendor err 129"
    )


PROFILES = {
    "2.10.3": Profile(
        version="2.10.3", cuda="11.4", bus_ids=True, conn_index=False, relaxed_ordering=False,
        p2p="P2P/IPC/read", shm="direct shared memory", hca_gdr_line="no module",
    ),
    "2.14.3": Profile(version="2.14.3", cuda="11.7", bus_ids=True, p2p="P2P/IPC/read"),
    "2.18.5": Profile(
        version="2.18.5",
        completion_warning=(
            "NET/IB : Got completion from peer {peer}<45678> with error 12, opcode 0, len 0, vendor err 129 "
            "(Recv) localGid ::ffff:10.0.0.1 remoteGid ::ffff:10.0.0.2"
        ),
    ),
    "2.21.5": Profile(version="2.21.5", cuda="12.4", shape_line=True, init_prefix="ncclCommInitRank "),
    "2.27.7": Profile(
        version="2.27.7", cuda="12.9", shape_line=True, init_prefix="ncclCommInitRankConfig ", path_gdr_by_rank=True,
        timestamp="[2026-12-03 10:00:00] ",
        completion_warning=(
            "NET/IB: Got completion from peer {peer}<45678> with status=12 opcode=0 len=0 vendor err 129 (Recv) "
            "localGid ::ffff:10.0.0.1 remoteGids ::ffff:10.0.0.2 hca mlx5_0"
        ),
    ),
}  # fmt: skip


def host_of(rank: int) -> str:
    return NODES[rank // GPUS]


def rank_log(profile: Profile, rank: int, *, warnings: int = 0) -> str:
    """What rank `rank` writes to its NCCL_DEBUG_FILE during init, and `warnings` IB completion errors."""
    host, local = host_of(rank), rank % GPUS
    pid = 4000 + rank
    lines: list[str] = []

    def info(msg: str) -> None:
        lines.append(f"{profile.timestamp}{host}:{pid}:{pid + 7} [{local}] NCCL INFO {msg}")

    def warn(where: str, msg: str) -> None:
        lines.append("")  # debug.cc starts a WARN with "\n"
        lines.append(f"{profile.timestamp}{host}:{pid}:{pid + 9} [{local}] {where} NCCL WARN {msg}")

    info(f"NCCL version {profile.version}+cuda{profile.cuda}")
    _network_lines(profile, info, warn, host, local)
    info(f"Using network {profile.network}")
    if profile.shape_line:
        info(f"comm 0x55d0c0ffee00 rank {rank} nRanks 16 nNodes 2 localRanks 8 localRank {local} MNNVL 0")
    info("Channel 00/02 :    0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15")  # rings.cc: no peer
    nxt = rank + 1 if local < GPUS - 1 else (rank + 1) % 16
    prv = rank - 1 if local > 0 else (rank - 1) % 16
    for channel in range(2):
        if local < GPUS - 1:
            info(_channel(profile, channel, rank, nxt, f"via {profile.p2p}"))
        else:
            info(_channel(profile, channel, rank, nxt, f"[send] via {_net_via(profile, local)}"))
        if local == 0:
            info(_channel(profile, channel, prv, rank, f"[receive] via {_net_via(profile, local)}"))
    if local in (2, 3):  # a tree edge NCCL routes through host memory
        info(f"Channel 01 : {_peer(profile, rank)} -> {_peer(profile, rank ^ 1)} via {profile.shm}")
    init = f"{profile.init_prefix}comm 0x55d0c0ffee00 rank {rank} nranks 16 cudaDev {local}"
    if not profile.bus_ids:
        init += f" nvmlDev {local}"
    info(f"{init} busId {BUS_IDS[local]:x} commId 0x6c1a2b3c4d5e6f70 - Init COMPLETE")
    info("some line this parser has never seen: 42 [x] -> ?")
    peer = "10.0.0.2" if host == "n1" else "10.0.0.1"
    for _ in range(warnings):
        warn("transport/net_ib.cc:1295", profile.completion_warning.format(peer=peer))
    return "\n".join(lines) + "\n"


def _network_lines(
    profile: Profile, info: Callable[[str], None], warn: Callable[[str, str], None], host: str, local: int
) -> None:
    address = "10.0.0.1" if host == "n1" else "10.0.0.2"
    if profile.network == "Socket":
        if profile.bus_ids:
            warn("misc/ibvwrap.cc:63", "Failed to open libibverbs.so[.1]")
        else:
            info("Failed to open libibverbs.so[.1]")
        info("NET/IB : No device found.")
        info(f"NET/Socket : Using [0]eth0:{address}<0>")
        return
    if profile.network != "IB":
        info(f"NET/Plugin: Loaded net plugin {profile.network} (v8)")
    devices = "".join(f" [{d}]mlx5_{d}:1/{profile.link_layer}" for d in range(GPUS))
    ro = "[RO]" if profile.relaxed_ordering else ""
    oob = f"ib0:{address}<0>"
    info(f"NET/IB : Using{devices} {ro}; OOB {oob}")  # 2.10-2.11: "Using%s ; OOB", ro is empty there
    if profile.hca_gdr_line == "no module":
        if not profile.gdr:
            info(f"NET/IB : GPU Direct RDMA Disabled for HCA {local} 'mlx5_{local}' (no module)")
    else:
        state = "Enabled" if profile.gdr else "Disabled"
        info(f"NET/IB : GPU Direct RDMA {state} for HCA {local} 'mlx5_{local}'")
    gpu = str(local) if profile.path_gdr_by_rank else f"{BUS_IDS[local]:x}"
    if profile.gdr:
        mode = " mode Default" if profile.path_gdr_by_rank else ""
        info(f"GPU Direct RDMA Enabled for GPU {gpu} / HCA {local} (distance 3 <= 4), read 1{mode}")
    else:
        info(f"GPU Direct RDMA Disabled for GPU {gpu} / HCA {local} (distance 6 > 4)")


def _peer(profile: Profile, rank: int) -> str:
    local = rank % GPUS
    return f"{rank}[{BUS_IDS[local]:x}]" if profile.bus_ids else f"{rank}[{local}]"


def _channel(profile: Profile, channel: int, src: int, dst: int, via: str) -> str:
    number = f"{channel:02d}/0" if profile.conn_index else f"{channel:02d}"
    return f"Channel {number} : {_peer(profile, src)} -> {_peer(profile, dst)} {via}"


def _net_via(profile: Profile, local: int) -> str:
    name = "Socket" if profile.network == "Socket" else profile.network
    return f"NET/{name}/{local}" + ("/GDRDMA" if profile.gdr and profile.network != "Socket" else "")


def job_logs(
    profile: Profile, *, socket_ranks: range = range(0), gdr_off_host: str = "", warnings: dict[int, int] | None = None
) -> dict[int, str]:
    """Every rank's log; some ranks on sockets, one host without GPUDirect RDMA, warnings on some ranks."""
    logs = {}
    for rank in range(len(NODES) * GPUS):
        mine = profile
        if rank in socket_ranks:
            mine = replace(mine, network="Socket")
        if host_of(rank) == gdr_off_host:
            mine = replace(mine, gdr=False)
        logs[rank] = rank_log(mine, rank, warnings=(warnings or {}).get(rank, 0))
    return logs
