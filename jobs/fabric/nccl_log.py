"""NCCL's own account of one rank (its NCCL_DEBUG=INFO file): version, network, HCAs and ports, GPUDirect
RDMA, the transport of every channel, the communicator's shape, and every NCCL WARN.

The line formats are NCCL's (src/debug.cc, init.cc, transport/net.cc, net_ib.cc, net_socket.cc, p2p.cc,
shm.cc, coll_net.cc, graph/paths.cc, graph/topo.cc), from 2.10 to 2.2x: peers in brackets by bus id
(hex, before 2.12) or device index, `Channel 00` or `Channel 00/0`, the version as an INFO line or bare,
an optional timestamp before the prefix (NCCL_DEBUG_TIMESTAMP_FORMAT). A line of any other form is
nothing, never an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

_TIMESTAMP = r"(?:\[[^\]]*\]\s*)?"
_PREFIX = rf"^{_TIMESTAMP}(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+)\s+"
INFO_LINE = re.compile(_PREFIX + r"\[(?P<dev>\d+)\] NCCL INFO (?P<msg>.*)$")
WARN_LINE = re.compile(_PREFIX + r"\[(?P<dev>\d+)\] (?P<where>\S+) NCCL WARN (?P<msg>.*)$")
BARE_VERSION = re.compile(rf"^{_TIMESTAMP}(?:\S+\s+)?NCCL version (?P<version>\d+\.\d+\.\d+)\S*")

VERSION = re.compile(r"^NCCL version (?P<version>\d+\.\d+\.\d+)")
NETWORK = re.compile(r"^Using network (?P<name>.+?)\s*$")
PLUGIN = re.compile(r"^NET/Plugin ?: Loaded (?:net|coll|collnet) plugin (?P<name>.+?) \((?P<api>v\d+)\)")
IB_USING = re.compile(r"^NET/IB ?: Using(?P<devices>.*?)\s*(?:\[RO\])?\s*; OOB (?P<oob>\S+)")
IB_DEVICE = re.compile(r"\[(?P<index>\d+)\]\s?(?P<name>[\w.\-]+):(?P<port>\d+)/(?P<link>IB|RoCE)")
IB_NONE = re.compile(r"^NET/IB ?: No device found")
IBVERBS_MISSING = re.compile(r"Failed to open libibverbs")
SOCKET_USING = re.compile(r"^NET/Socket ?: Using(?P<interfaces>.*)$")
SOCKET_INTERFACE = re.compile(r"\[\d+\](?P<name>[^\s:]+):")
HCA_GDR = re.compile(
    r"^NET/(?P<net>\S+) ?: GPU Direct RDMA (?P<state>Enabled|Disabled) for HCA (?P<index>\d+) '(?P<name>[^']+)'"
)
PATH_GDR = re.compile(r"^GPU Direct RDMA (?P<state>Enabled|Disabled) for GPU (?P<gpu>\w+) / HCA (?P<hca>\w+)")
CHANNEL = re.compile(
    r"^Channel (?P<channel>\d+)(?:/(?P<conn>\d+))? : (?P<src>\d+)\[(?P<srcdev>[0-9a-fA-Fx]+)\] -> "
    r"(?P<dst>\d+)\[(?P<dstdev>[0-9a-fA-Fx]+)\] (?:\[(?P<direction>send|receive)\] )?via (?P<via>.+?)\s*$"
)
COLLNET_CHANNEL = re.compile(
    r"^CollNet (?P<channel>\d+)(?:/\d+)? : (?P<rank>\d+) \[(?:send|receive)\] via (?P<via>\S+)"
)
NVLS = re.compile(r"^(?:Connected NVLS tree|NVLS multicast support is available)")
COMM_SHAPE = re.compile(r"rank (?P<rank>\d+) nRanks (?P<nranks>\d+) nNodes (?P<nnodes>\d+) localRanks (?P<local>\d+)")
INIT_COMPLETE = re.compile(r"rank (?P<rank>\d+) nranks (?P<nranks>\d+) .*Init COMPLETE")
NET_VIA = re.compile(r"^(?P<kind>NET|COLLNET)/(?P<net>[^/(]+)/(?P<dev>\d+)(?:\(\d+\))?(?P<rest>.*)$")


@dataclass(frozen=True, slots=True)
class IbDevice:
    index: int
    name: str
    port: int
    link_layer: str
    """IB or RoCE, as NCCL names it."""


@dataclass(frozen=True, slots=True)
class Channel:
    channel: int
    src: int
    dst: int
    transport: str
    """P2P/IPC, P2P/CUMEM, P2P/direct pointer, P2P/indirect, SHM, NET/<network>, COLLNET/<network>."""
    device: int = -1
    """The network device index NCCL used (NET, COLLNET), -1 otherwise."""
    gdr: bool = False
    """GPUDirect RDMA on this connection (/GDRDMA)."""

    @property
    def over_network(self) -> bool:
        return self.transport.startswith(("NET/", "COLLNET/"))


@dataclass(frozen=True, slots=True)
class NcclWarning:
    where: str
    """NCCL's source location, file:line."""
    message: str


@dataclass(slots=True)
class NcclRankLog:
    rank: int
    host: str = ""
    version: str = ""
    network: str = ""
    """The network NCCL chose: IB, Socket, or a plugin's name (IBext_v8, AWS Libfabric, ...)."""
    plugin: str = ""
    ib_devices: list[IbDevice] = field(default_factory=list)
    oob: str = ""
    """The interface NCCL's IB transport bootstraps over, as it prints it (ib0:10.0.0.1<0>)."""
    socket_interfaces: list[str] = field(default_factory=list)
    ib_missing: str = ""
    """Why NCCL has no IB device, when it says so (libibverbs missing, no device found)."""
    hca_gdr: dict[str, bool] = field(default_factory=dict)
    """HCA name -> whether NCCL can use GPUDirect RDMA with it."""
    path_gdr: list[bool] = field(default_factory=list)
    """NCCL's GPU-to-HCA decisions (graph/paths.cc), in order."""
    channels: list[Channel] = field(default_factory=list)
    nvls: bool = False
    nranks: int = 0
    nnodes: int = 0
    local_ranks: int = 0
    warnings: list[NcclWarning] = field(default_factory=list)
    lines_read: int = 0

    @property
    def network_channels(self) -> list[Channel]:
        return [c for c in self.channels if c.over_network]

    @property
    def rdma_channels(self) -> list[Channel]:
        """Network connections over anything but NCCL's socket transport: those GPUDirect RDMA applies to."""
        return [c for c in self.network_channels if c.transport != "NET/Socket"]

    @property
    def intra_node(self) -> list[str]:
        """The transports this rank uses inside its node, first seen first; NVLS when NCCL connected it."""
        kinds = [c.transport for c in self.channels if not c.over_network]
        return list(dict.fromkeys(kinds + (["NVLS"] if self.nvls else [])))

    @property
    def network_gdr(self) -> bool | None:
        """Whether every network connection uses GPUDirect RDMA (sockets never do); None when this rank has none."""
        network = self.network_channels
        return all(c.gdr for c in network) if network else None


def parse_lines(rank: int, lines: Iterable[str]) -> NcclRankLog:
    log = NcclRankLog(rank=rank)
    for line in lines:
        log.lines_read += 1
        _read_line(log, line.rstrip("\n"))
    return log


def parse_file(rank: int, path: Path) -> NcclRankLog:
    with path.open(encoding="utf-8", errors="replace") as handle:
        return parse_lines(rank, handle)


def _read_line(log: NcclRankLog, line: str) -> None:
    info = INFO_LINE.match(line)
    if info:
        log.host = log.host or info["host"]
        _read_info(log, info["msg"])
        return
    warn = WARN_LINE.match(line)
    if warn:
        log.host = log.host or warn["host"]
        log.warnings.append(NcclWarning(where=warn["where"], message=warn["msg"].strip()))
        if IBVERBS_MISSING.search(warn["msg"]):
            log.ib_missing = log.ib_missing or "libibverbs could not be opened"
        return
    bare = BARE_VERSION.match(line)
    if bare and not log.version:
        log.version = bare["version"]


def _read_info(log: NcclRankLog, msg: str) -> None:
    for pattern, reader in _READERS:
        found = pattern.search(msg) if pattern in _SEARCHED else pattern.match(msg)
        if found:
            reader(log, found)
            return


def _version(log: NcclRankLog, m: re.Match[str]) -> None:
    log.version = log.version or m["version"]


def _network(log: NcclRankLog, m: re.Match[str]) -> None:
    log.network = m["name"]


def _plugin(log: NcclRankLog, m: re.Match[str]) -> None:
    log.plugin = log.plugin or f"{m['name']} ({m['api']})"


def _ib_using(log: NcclRankLog, m: re.Match[str]) -> None:
    log.ib_devices = [
        IbDevice(index=int(d["index"]), name=d["name"], port=int(d["port"]), link_layer=d["link"])
        for d in IB_DEVICE.finditer(m["devices"])
    ]
    log.oob = m["oob"]


def _ib_none(log: NcclRankLog, m: re.Match[str]) -> None:
    log.ib_missing = log.ib_missing or "NCCL found no IB device"


def _ibverbs(log: NcclRankLog, m: re.Match[str]) -> None:
    log.ib_missing = log.ib_missing or "libibverbs could not be opened"


def _socket_using(log: NcclRankLog, m: re.Match[str]) -> None:
    log.socket_interfaces = [i["name"] for i in SOCKET_INTERFACE.finditer(m["interfaces"])]


def _hca_gdr(log: NcclRankLog, m: re.Match[str]) -> None:
    log.hca_gdr[m["name"]] = m["state"] == "Enabled"


def _path_gdr(log: NcclRankLog, m: re.Match[str]) -> None:
    log.path_gdr.append(m["state"] == "Enabled")


def _channel(log: NcclRankLog, m: re.Match[str]) -> None:
    log.channels.append(_classify(int(m["channel"]), int(m["src"]), int(m["dst"]), m["via"]))


def _collnet(log: NcclRankLog, m: re.Match[str]) -> None:
    rank = int(m["rank"])
    log.channels.append(_classify(int(m["channel"]), rank, rank, m["via"]))


def _nvls(log: NcclRankLog, m: re.Match[str]) -> None:
    log.nvls = True


def _shape(log: NcclRankLog, m: re.Match[str]) -> None:
    log.nranks, log.nnodes, log.local_ranks = int(m["nranks"]), int(m["nnodes"]), int(m["local"])


def _complete(log: NcclRankLog, m: re.Match[str]) -> None:
    log.nranks = log.nranks or int(m["nranks"])


def _classify(channel: int, src: int, dst: int, via: str) -> Channel:
    net = NET_VIA.match(via)
    if net:
        kind = "NET" if net["kind"] == "NET" else "COLLNET"
        return Channel(channel, src, dst, f"{kind}/{net['net']}", int(net["dev"]), "/GDRDMA" in net["rest"])
    for prefix in ("P2P/direct pointer", "P2P/indirect", "P2P/IPC", "P2P/CUMEM", "P2P/MNNVL"):
        if via.startswith(prefix):
            return Channel(channel, src, dst, prefix)
    if via.startswith(("SHM", "direct shared memory")):
        return Channel(channel, src, dst, "SHM")
    return Channel(channel, src, dst, via.split()[0])


Reader = Callable[[NcclRankLog, re.Match[str]], None]

_SEARCHED = {COMM_SHAPE, INIT_COMPLETE, IBVERBS_MISSING}
"""Each INFO message is read by the first pattern that fits: anchored at its start, or anywhere for these."""

_READERS: list[tuple[re.Pattern[str], Reader]] = [
    (VERSION, _version),
    (NETWORK, _network),
    (PLUGIN, _plugin),
    (IB_USING, _ib_using),
    (IB_NONE, _ib_none),
    (SOCKET_USING, _socket_using),
    (HCA_GDR, _hca_gdr),
    (PATH_GDR, _path_gdr),
    (CHANNEL, _channel),
    (COLLNET_CHANNEL, _collnet),
    (NVLS, _nvls),
    (COMM_SHAPE, _shape),
    (INIT_COMPLETE, _complete),
    (IBVERBS_MISSING, _ibverbs),
]
