"""What a rank learns about its process group's set-up beyond init_process_group's own time.

When the set-up fails, torch's own exception says little ("The client socket has timed out ... while
trying to connect to (addr, port)": a refused port, an unresolvable name and a silent firewall all end
that way, their reasons only in c10d's warnings on stderr). So the rank, once init_process_group has
failed, resolves the address and tries one TCP connection to it, and records what it found with its
error (status setup_failure), for the verdict to name the cause and the setting to look at.

When it succeeds, the set-up is not all of it: since NCCL 2.22 (NCCL_RUNTIME_CONNECT=1, the default) a
communicator connects to its peers on its first collective, not when it is created. So the rank times
one small first collective (status setup.connect_s); on gloo, whose pairs connect inside the set-up,
it is the first call's own cost.
"""

from __future__ import annotations

import errno
import socket
import time
from typing import TYPE_CHECKING, Any

from jobs.rundir.records.rank import SetupFailure, SetupProbe

if TYPE_CHECKING:
    import torch

PROBE_TIMEOUT_S = 2.0
UNREACHABLE = (errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EADDRNOTAVAIL)


def probe_rendezvous(
    address: str, port: int, own_addresses: list[str], store_here: bool, timeout_s: float = PROBE_TIMEOUT_S
) -> SetupFailure:
    """Resolve `address` and try one connection to its port. `store_here`: this rank runs the rendezvous
    store (rank 0); when the address is one of this host's own, the store was here and the set-up only
    waited for the others (its socket is already closed, so a connection now would be refused)."""
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        return SetupFailure(address, port, SetupProbe.UNRESOLVED, str(error))
    resolved = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if store_here and any(ip in own_addresses or ip.startswith("127.") or ip == "::1" for ip in resolved):
        return SetupFailure(address, port, SetupProbe.ANSWERS, f"{address} is this host: the store was here")
    return _connect(address, port, resolved[0], timeout_s)


def _connect(address: str, port: int, ip: str, timeout_s: float) -> SetupFailure:
    where = f"{address} resolves to {ip}" if ip != address else ip
    try:
        with socket.create_connection((ip, port), timeout=timeout_s):
            return SetupFailure(address, port, SetupProbe.ANSWERS, f"{where}; port {port} accepts a connection")
    except ConnectionRefusedError as error:
        return SetupFailure(address, port, SetupProbe.REFUSED, f"{where}; {error.strerror or error}")
    except TimeoutError:
        return SetupFailure(address, port, SetupProbe.SILENT, f"{where}; no answer within {timeout_s:g} s")
    except OSError as error:
        probe = SetupProbe.UNREACHABLE if error.errno in UNREACHABLE else SetupProbe.SILENT
        return SetupFailure(address, port, probe, f"{where}; {error.strerror or error}")


def first_collective_s(device: torch.device) -> float:
    """Seconds one 1-element all_reduce over the default process group takes, to its end on the device.
    The rank's first collective: on NCCL it makes the connections its algorithm needs (a later size that
    NCCL runs with another algorithm connects that one's then)."""
    import torch
    import torch.distributed as dist

    one = torch.ones(1, device=device)
    _settle(torch, device)  # the tensor's own fill is not the collective's
    started = time.perf_counter()
    dist.all_reduce(one)
    _settle(torch, device)
    return time.perf_counter() - started


def _settle(torch: Any, device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
