"""The fabric section of a report: one line per host from NCCL's logs and the port snapshots, then what is
wrong, each naming host, rank and device, and the config's fabric requirements that are not met."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from jobs.config.fabric_settings import FabricSettings
from jobs.fabric.nccl_log import NcclRankLog, parse_file
from jobs.fabric.ports import error_growth
from jobs.inspect.postmortem import rank_spans
from jobs.rundir.layout import RunDir
from jobs.rundir.records.codec import RecordError
from jobs.rundir.records.findings import Code
from jobs.rundir.records.ports import PORTS, PortSnapshot
from jobs.rundir.records.rank import RankStatus
from slurm.hostlist import readable_hostlist

T = TypeVar("T")


@dataclass(slots=True)
class HostFabric:
    host: str
    ranks: list[int]
    nccl_versions: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)
    ports: str = ""
    """The RDMA ports at the start of the job, e.g. mlx5_[0-7] (8 ports ACTIVE 400 Gb/sec)."""
    gdr_ranks: int = 0
    network_ranks: int = 0
    """Ranks on this host with connections over the network; gdr_ranks of them with GPUDirect RDMA on all."""
    intra_node: list[str] = field(default_factory=list)
    nccl_used: bool = True

    def line(self) -> str:
        parts = [f"{self.host:<10}"]
        if self.nccl_used:
            parts.append(f"NCCL {'/'.join(self.nccl_versions)}" if self.nccl_versions else "NCCL log not found")
        if self.networks:
            parts.append(f"network {'/'.join(self.networks)}")
        parts.append(self.ports or "no RDMA device")
        if self.network_ranks:
            parts.append(f"GDRDMA {self.gdr_ranks}/{self.network_ranks}")
        if self.intra_node:
            parts.append(f"intra-node {'/'.join(self.intra_node)}")
        return "  ".join(parts)


FailureKind = Literal["no_network_choice", "network", "gdr", "no_end_snapshot", "port_errors"]


@dataclass(frozen=True, slots=True)
class FabricFailure:
    """A fabric requirement the run did not meet, on the hosts it names: drains, excludes and the history take
    the hosts from here, and every sentence about it is `sentence()`."""

    kind: FailureKind
    setting: str
    """The config key: 'fabric.require_network'."""
    required: str
    """Its value: 'ib', 'true', '0'."""
    measured: str
    """What the run showed instead: the networks used ('Socket'), 'no GPUDirect RDMA', the error count."""
    ranks_by_host: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """Each host it names with its ranks at fault (none where the fault is a port's)."""
    hca: str = ""
    port: str = ""
    code: Code = "fabric_failed"
    """fabric_failed; not_run where the requirement could not be checked (that blames no host)."""

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(host for host, _ in self.ranks_by_host)

    @property
    def ranks(self) -> tuple[int, ...]:
        return tuple(sorted(rank for _, ranks in self.ranks_by_host for rank in ranks))

    def sentence(self) -> str:
        """The record in words: the report's, the JSON's, the page's and the drain's figure."""
        on = "; ".join(f"{host} rank(s) {rank_spans(ranks)}" for host, ranks in self.ranks_by_host)
        if self.kind == "no_network_choice":
            return (
                f"rank(s) {rank_spans(self.ranks)}: no NCCL network choice in logs/nccl-rank-*.log, so "
                "fabric.require_network / require_gdr cannot be checked"
            )
        if self.kind == "network":
            return f"{self.setting}={self.required}: {on} use {self.measured}"
        if self.kind == "gdr":
            return f"{self.setting}: {on} reach the network without GPUDirect RDMA"
        host = self.hosts[0] if self.hosts else "?"
        if self.kind == "no_end_snapshot":
            return f"{self.setting}: {host} took no end-of-job port snapshot, so it cannot be checked"
        return (
            f"{self.setting}={self.required}: {host} {self.hca} port {self.port} counted {self.measured} error(s) "
            "during the job"
        )

    def to_json(self) -> dict[str, Any]:
        plain = asdict(self)
        plain["ranks_by_host"] = [{"host": host, "ranks": list(ranks)} for host, ranks in self.ranks_by_host]
        return {**plain, "hosts": list(self.hosts), "line": self.sentence()}


@dataclass(slots=True)
class FabricReport:
    hosts: list[HostFabric]
    findings: list[str]
    """What is wrong or suspicious, whatever the config requires."""
    failures: list[FabricFailure]
    """The config's fabric requirements that are not met: these fail the run."""
    notes: list[str]
    """What could not be seen, said plainly (NCCL not used, no RDMA device)."""

    def failure_lines(self) -> list[str]:
        return [failure.sentence() for failure in self.failures]

    def lines(self) -> list[str]:
        lines = ["# fabric: per host (NCCL's own log, and sysfs at the start of the job)"]
        lines += [f"#   {host.line()}" for host in self.hosts]
        lines += [f"#   {note}" for note in self.notes]
        if self.findings:
            lines.append("# fabric problems:")
            lines += [f"#   {finding}" for finding in self.findings]
        lines += [f"# fabric requirement not met: {failure}" for failure in self.failure_lines()]
        return lines

    def to_json(self) -> dict[str, Any]:
        """The section as summary.json and --format json carry it: `failures` in words, as ever, and
        `failure_records` with the hosts, ranks, port, code and figures of each."""
        return {
            "hosts": [asdict(host) for host in self.hosts],
            "findings": list(self.findings),
            "failures": self.failure_lines(),
            "failure_records": [failure.to_json() for failure in self.failures],
            "notes": list(self.notes),
        }


def fabric_report(
    run: RunDir, backend: str, settings: FabricSettings, statuses: Mapping[int, RankStatus]
) -> FabricReport:
    hosts_of = {rank: status.host for rank, status in statuses.items()}
    logs = _nccl_logs(run, hosts_of) if backend == "nccl" else {}
    starts, unreadable = _snapshots(run, "start")
    ends, unreadable_ends = _snapshots(run, "end")
    notes = _notes(backend, settings, logs, starts) + unreadable + unreadable_ends
    hosts = _hosts(hosts_of, logs, starts, nccl_used=backend == "nccl")
    growth = _error_growth(starts, ends)
    findings = _version_findings(logs) + _network_findings(logs) + _gdr_findings(logs)
    findings += _port_findings(starts, ends, growth) + _warning_findings(logs)
    failures = _failures(settings, logs, hosts_of, starts, ends, growth)
    return FabricReport(hosts=hosts, findings=findings, failures=failures, notes=notes)


def imported_fabric() -> FabricReport:
    """An imported nccl-tests run (launcher imported): its output keeps neither NCCL's log nor the ports,
    so the section says that once instead of a host line each that reads as evidence."""
    note = "imported from nccl-tests' output, which keeps no NCCL log and no port snapshot: nothing to say of it"
    return FabricReport(hosts=[], findings=[], failures=[], notes=[note])


def _nccl_logs(run: RunDir, hosts_of: Mapping[int, str]) -> dict[int, NcclRankLog]:
    logs = {}
    for rank, host in sorted(hosts_of.items()):
        path = run.nccl_debug_log(rank)
        if path.is_file():
            log = parse_file(rank, path)
            log.host = host if host != "?" else log.host
            logs[rank] = log
    return logs


def _snapshots(run: RunDir, when: str) -> tuple[dict[str, PortSnapshot], list[str]]:
    """Host -> its snapshot taken at `when`, and a line for each snapshot that could not be read (left out)."""
    found, unreadable = {}, []
    for path in sorted(run.fabric_dir.glob(f"ports-*-{when}.json")) if run.fabric_dir.is_dir() else []:
        try:
            snap = PORTS.read(path)
        except RecordError as error:
            unreadable.append(f"port snapshot left out: {error}")
            continue
        except OSError:
            continue
        found[snap.host or path.name] = snap
    return found, unreadable


def _notes(
    backend: str, settings: FabricSettings, logs: Mapping[int, NcclRankLog], starts: Mapping[str, PortSnapshot]
) -> list[str]:
    notes = []
    if backend != "nccl":
        notes.append(f"NCCL was not used (backend {backend}): no transport to report")
    elif not logs:
        notes.append("no NCCL debug log in logs/ (set fabric.nccl_info=true to keep NCCL's own account)")
    bare = sorted(host for host, snap in starts.items() if not snap.rdma)
    if bare:
        where = Path(settings.sysfs_root) / "class" / "infiniband"
        notes.append(f"no RDMA device found on {readable_hostlist(bare)} (nothing under {where})")
    if not starts:
        notes.append("no port snapshot was taken (no rank recorded one)")
    return notes


def _hosts(
    hosts_of: Mapping[int, str], logs: Mapping[int, NcclRankLog], starts: Mapping[str, PortSnapshot], nccl_used: bool
) -> list[HostFabric]:
    by_host: dict[str, list[int]] = defaultdict(list)
    for rank, host in sorted(hosts_of.items()):
        by_host[host].append(rank)
    hosts = []
    for host, ranks in by_host.items():
        mine = [logs[r] for r in ranks if r in logs]
        on_network = [log for log in mine if log.network_gdr is not None]
        hosts.append(
            HostFabric(
                host=host,
                ranks=ranks,
                nccl_versions=_distinct(log.version for log in mine if log.version),
                networks=_distinct(log.network for log in mine if log.network),
                ports=_ports_summary(starts.get(host)),
                gdr_ranks=sum(1 for log in on_network if log.network_gdr),
                network_ranks=len(on_network),
                intra_node=_distinct(kind for log in mine for kind in log.intra_node),
                nccl_used=nccl_used,
            )
        )
    return hosts


def _distinct(values: Iterable[T]) -> list[T]:
    """In order, each once."""
    return list(dict.fromkeys(values))


def _ports_summary(snap: PortSnapshot | None) -> str:
    ports = snap.ports() if snap is not None else []
    if not ports:
        return ""
    active = sum(1 for _, _, info in ports if info.state == "ACTIVE")
    rates = _distinct(f"{info.rate_gbps:g}" for _, _, info in ports if info.rate_gbps)
    state = f"{len(ports)} ports ACTIVE" if active == len(ports) else f"{active}/{len(ports)} ports ACTIVE"
    rate = f" {'/'.join(rates)} Gb/sec" if rates else ""
    return f"{readable_hostlist(sorted({hca for hca, _, _ in ports}))} ({state}{rate})"


def _grouped(logs: Iterable[NcclRankLog], key: Callable[[NcclRankLog], str]) -> dict[str, list[NcclRankLog]]:
    """The logs by key, in the order each key is first seen; a log whose key is empty is left out."""
    groups: dict[str, list[NcclRankLog]] = defaultdict(list)
    for log in logs:
        if key(log):
            groups[key(log)].append(log)
    return groups


def _host(log: NcclRankLog) -> str:
    return log.host or "?"


def _ranks_by_host(logs: list[NcclRankLog]) -> str:
    return "; ".join(
        f"{host} rank(s) {rank_spans(log.rank for log in mine)}" for host, mine in _grouped(logs, _host).items()
    )


def _version_findings(logs: Mapping[int, NcclRankLog]) -> list[str]:
    versions = _grouped(logs.values(), lambda log: log.version)
    if len(versions) < 2:
        return []
    return ["NCCL versions differ: " + ", ".join(f"{v} on {_ranks_by_host(ls)}" for v, ls in versions.items())]


def _network_findings(logs: Mapping[int, NcclRankLog]) -> list[str]:
    networks = _grouped(logs.values(), lambda log: log.network)
    if len(networks) < 2:
        return []
    usual = max(networks, key=lambda name: len(networks[name]))
    found = []
    for name, ranks in networks.items():
        if name != usual:
            why = _distinct(log.ib_missing for log in ranks if log.ib_missing)
            reason = f" (NCCL: {'; '.join(why)})" if why else ""
            found.append(
                f"{_ranks_by_host(ranks)} use network {name} while {len(networks[usual])} other rank(s) use {usual}"
                + reason
            )
    return found


def _gdr_findings(logs: Mapping[int, NcclRankLog]) -> list[str]:
    """RDMA networks only: a rank on sockets has its own finding."""
    without = [log for log in logs.values() if any(not c.gdr for c in log.rdma_channels)]
    if not without:
        return []
    found = []
    for host, ranks in _grouped(without, _host).items():
        devices = _distinct(f"{c.transport}/{c.device}" for log in ranks for c in log.rdma_channels if not c.gdr)
        disabled = _distinct(name for log in ranks for name, on in log.hca_gdr.items() if not on)
        hcas = f"; NCCL: GPU Direct RDMA disabled for HCA {', '.join(disabled)}" if disabled else ""
        found.append(
            f"{host} rank(s) {rank_spans(log.rank for log in ranks)} reach the network without GPUDirect RDMA "
            f"(via {', '.join(devices)}, no /GDRDMA){hcas}"
        )
    return found


Growth = dict[str, dict[tuple[str, str], dict[str, int]]]
"""host -> (hca, port) -> error counter -> how much it grew during the job."""


def _error_growth(starts: Mapping[str, PortSnapshot], ends: Mapping[str, PortSnapshot]) -> Growth:
    return {host: error_growth(starts[host], ends[host]) for host in sorted(set(starts) & set(ends))}


def _port_findings(starts: Mapping[str, PortSnapshot], ends: Mapping[str, PortSnapshot], growth: Growth) -> list[str]:
    found = []
    for when, snaps in (("at the start", starts), ("at the end", ends)):
        for host, snap in sorted(snaps.items()):
            for hca, port, info in snap.ports():
                if info.state != "ACTIVE" or info.phys_state not in ("LinkUp", ""):
                    found.append(
                        f"{host} {hca} port {port}: {info.state or '?'} / {info.phys_state or '?'} {when} of the job"
                    )
    found += _rate_findings(starts)
    for host, grown in growth.items():
        for (hca, port), deltas in sorted(grown.items()):
            counted = ", ".join(f"{name} +{delta}" for name, delta in deltas.items())
            found.append(f"{host} {hca} port {port}: error counters grew during the job: {counted}")
    return found


def _rate_findings(starts: Mapping[str, PortSnapshot]) -> list[str]:
    rates: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for host, snap in starts.items():
        for hca, port, info in snap.ports():
            if info.rate_gbps:
                rates[(hca, port)][host] = float(info.rate_gbps)
    found = []
    for (hca, port), by_host in sorted(rates.items()):
        best = max(by_host.values())
        at_best = sorted(host for host, rate in by_host.items() if rate == best)
        for host, rate in sorted(by_host.items()):
            if rate < best:
                found.append(
                    f"{host} {hca} port {port} runs at {rate:g} Gb/sec; the same port on {readable_hostlist(at_best)} "
                    f"at {best:g} Gb/sec (trained down?)"
                )
    return found


def _warning_findings(logs: Mapping[int, NcclRankLog]) -> list[str]:
    groups: dict[str, list[tuple[NcclRankLog, str]]] = defaultdict(list)
    for log in logs.values():
        for warning in log.warnings:
            groups[warning.where].append((log, warning.message))
    found = []
    for where, seen in groups.items():
        ranks = _distinct(log.rank for log, _ in seen)
        logs_seen = [logs[rank] for rank in ranks]
        first = Counter(message for _, message in seen).most_common(1)[0][0]
        found.append(f"NCCL WARN {where} ({len(seen)} line(s); {_ranks_by_host(logs_seen)}): {first}")
    return found


def _failures(
    settings: FabricSettings,
    logs: Mapping[int, NcclRankLog],
    hosts_of: Mapping[int, str],
    starts: Mapping[str, PortSnapshot],
    ends: Mapping[str, PortSnapshot],
    growth: Growth,
) -> list[FabricFailure]:
    failures = []
    silent = sorted(rank for rank in hosts_of if rank not in logs or not logs[rank].network)
    if settings.needs_nccl_log and silent:
        failures.append(
            FabricFailure(
                "no_network_choice", "fabric.require_network / require_gdr", "an NCCL network choice",
                "no NCCL log line", _by_host((hosts_of[rank], rank) for rank in silent), code="not_run",
            )
        )  # fmt: skip
    if settings.require_network != "any":
        wrong = [
            log for log in logs.values() if log.network and _network_class(log.network) != settings.require_network
        ]
        if wrong:
            names = "/".join(_distinct(log.network for log in wrong))
            failures.append(
                FabricFailure("network", "fabric.require_network", settings.require_network, names, _log_hosts(wrong))
            )
    if settings.require_gdr:
        without = [log for log in logs.values() if log.network_gdr is False]
        if without:
            failures.append(
                FabricFailure("gdr", "fabric.require_gdr", "true", "no GPUDirect RDMA", _log_hosts(without))
            )
    if settings.max_port_errors >= 0:
        failures += _port_error_failures(settings.max_port_errors, starts, ends, growth)
    return failures


def _by_host(placed: Iterable[tuple[str, int]]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """(host, rank) pairs as each host, in the order first seen, with its ranks."""
    ranks: dict[str, list[int]] = defaultdict(list)
    for host, rank in placed:
        ranks[host].append(rank)
    return tuple((host, tuple(mine)) for host, mine in ranks.items())


def _log_hosts(logs: Iterable[NcclRankLog]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return _by_host((_host(log), log.rank) for log in logs)


def _network_class(network: str) -> str:
    if network.startswith("IB"):
        return "ib"
    return "socket" if network == "Socket" else network


def _port_error_failures(
    limit: int, starts: Mapping[str, PortSnapshot], ends: Mapping[str, PortSnapshot], growth: Growth
) -> list[FabricFailure]:
    setting, required = "fabric.max_port_errors", str(limit)
    failures = []
    for host in sorted(host for host, snap in starts.items() if snap.rdma and host not in ends):
        failures.append(
            FabricFailure("no_end_snapshot", setting, required, "no end-of-job port snapshot", ((host, ()),))
        )
    for host, grown in growth.items():
        for (hca, port), deltas in sorted(grown.items()):
            total = sum(deltas.values())
            if total > limit:
                failures.append(FabricFailure("port_errors", setting, required, str(total), ((host, ()),), hca, port))
    return failures


@dataclass(frozen=True, slots=True)
class LineRate:
    """The slowest line a rank's traffic crosses, by the nodes' own account (sysfs at the start of the job)."""

    gbps: float
    """Gb/s."""
    what: str
    """'eth0 at 10 Gb/s (the slowest of n[1-2])'."""

    @property
    def gigabytes(self) -> float:
        """GB/s: busbw's unit."""
        return self.gbps / 8


def line_rate(
    run: RunDir, backend: str, env: Mapping[str, str], hosts: Iterable[str], given_gbps: float = 0.0
) -> LineRate | None:
    """`given_gbps` (fabric.line_gbps) if set, else the RDMA ports' rate (NCCL), else the speed of the
    interface the config names for the backend's sockets (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME); None
    when the snapshots do not say."""
    if given_gbps > 0:
        return LineRate(given_gbps, f"{given_gbps:g} Gb/s (fabric.line_gbps)")
    starts = {host: snap for host, snap in _snapshots(run, "start")[0].items() if host in set(hosts)}
    rates = _rdma_rates(starts) if backend == "nccl" else {}
    name = "RDMA ports"
    if not rates:
        name = _socket_interface(env, backend)
        rates = {host: _speed_mbps(snap, name) for host, snap in starts.items()}
        rates = {host: mbps / 1000 for host, mbps in rates.items() if mbps > 0}
    if not name or not rates or len(rates) < len(starts):
        return None
    slowest = min(rates.values())
    return LineRate(slowest, f"{name} at {slowest:g} Gb/s (the slowest of {readable_hostlist(sorted(rates))})")


def _speed_mbps(snap: PortSnapshot, interface: str) -> int:
    """The interface's speed in Mb/s; 0 when the snapshot does not say."""
    found = snap.net.get(interface)
    return (found.speed_mbps or 0) if found is not None else 0


def _rdma_rates(starts: Mapping[str, PortSnapshot]) -> dict[str, float]:
    rates = {}
    for host, snap in starts.items():
        active = [
            float(info.rate_gbps) for _, _, info in snap.ports() if info.rate_gbps and "ACTIVE" in info.state.upper()
        ]
        if active:
            rates[host] = min(active)
    return rates


def _socket_interface(env: Mapping[str, str], backend: str) -> str:
    """The first interface GLOO_SOCKET_IFNAME or NCCL_SOCKET_IFNAME names ('=eth0,eth1' -> 'eth0'), or ''."""
    value = env.get("NCCL_SOCKET_IFNAME" if backend == "nccl" else "GLOO_SOCKET_IFNAME", "")
    first = value.split(",")[0].lstrip("=")
    return "" if first.startswith("^") else first
