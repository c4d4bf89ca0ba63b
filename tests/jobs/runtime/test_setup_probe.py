"""What a rank finds at its rendezvous address after a failed set-up, on real sockets of this machine."""

from __future__ import annotations

import socket

from jobs.rundir.records.rank import SetupProbe
from jobs.runtime.setup_probe import probe_rendezvous


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_a_port_nothing_listens_on_is_refused() -> None:
    port = free_port()
    found = probe_rendezvous("127.0.0.1", port, [], store_here=False)
    assert (found.probe, found.address, found.port) == (SetupProbe.REFUSED, "127.0.0.1", port)
    assert "refused" in found.detail.lower()


def test_a_name_that_does_not_resolve_is_unresolved() -> None:
    found = probe_rendezvous("nosuch-master.invalid", 29500, [], store_here=False)
    assert found.probe is SetupProbe.UNRESOLVED and found.detail


def test_a_listening_rendezvous_answers() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        found = probe_rendezvous("localhost", port, [], store_here=False)
    assert found.probe is SetupProbe.ANSWERS and "resolves to 127.0.0.1" in found.detail


def test_rank_0_whose_store_was_on_its_own_host_only_waited() -> None:
    found = probe_rendezvous("127.0.0.1", free_port(), ["10.0.0.1"], store_here=True)
    assert found.probe is SetupProbe.ANSWERS and "the store was here" in found.detail
