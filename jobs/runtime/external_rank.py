"""A rank another launcher started (`collbench rank`): its world agrees on one run directory through the
rendezvous store, then the rank runs the body every collbench rank runs (jobs.runtime.rank_job.run_rank).

The run directory's name goes through the store at MASTER_ADDR:MASTER_PORT, not through a name derived
from an id the launcher gives: torchrun's run id is `none` unless --rdzv-id says otherwise, so two runs
would share it. Under torchrun with TORCHELASTIC_USE_AGENT_STORE=True the agent serves that store and
every rank is its client, as torch.distributed's own rendezvous then is; otherwise rank 0 serves it,
multi-tenant, so that the process group's rendezvous (tcp://, rank 0 multi-tenant too) shares the one
server on the one port. Rank 0 makes the run directory and sets its path under `collbench/run_dir/N`
(N: torchrun's restart count); the others wait for it as long as timeouts.collective_s. Where rank 0
cannot make it, it sets the reason instead, and every rank says it in one line and stops.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobs.runtime.rank_job import run_rank

RUN_DIR_KEY = "collbench/run_dir"
REFUSED = "refused: "
"""What rank 0 sets in place of a run directory's path when it cannot make one."""


class WorldNotAgreed(RuntimeError):
    """This rank has no run directory: rank 0 could not make one, or never said its name in time."""


@dataclass(frozen=True, slots=True)
class StoreAddress:
    """Where the world's rendezvous store is, and who serves it."""

    rank: int
    world_size: int
    master_addr: str
    master_port: int
    agent_store: bool
    """torchrun's agent serves it: every rank is a client."""
    restart: int
    """torchrun's restart count: each restart agrees on a run directory of its own."""


def run_external_rank(
    config: dict[str, Any],
    environment: Mapping[str, str],
    dropped: Sequence[str],
    store: Mapping[str, Any],
    timeout_s: float,
    make_run: Callable[[], str],
) -> tuple[str, dict[str, Any]]:
    """The run directory the world agreed on, and this rank's result (run_rank's). `environment` is set and
    `dropped` removed first: the variables the rank body reads must say this rank's place. `store`: the
    fields of StoreAddress, as plain data (the CLI that calls this never imports the runtime). `make_run`,
    on rank 0 only, makes the run directory and returns its path; ValueError or OSError from it are said to
    every rank."""
    where = StoreAddress(**store)
    os.environ.update(environment)
    for name in dropped:
        os.environ.pop(name, None)
    held = _store(where, timeout_s)  # held until the rank ends: rank 0's serves the process group too
    run_dir = _agree(held, where, make_run)
    result = run_rank(config, run_dir, None)
    del held
    return run_dir, result


def _store(where: StoreAddress, timeout_s: float) -> Any:
    from torch.distributed import TCPStore  # type: ignore[attr-defined]  # exported at run time only

    try:
        return TCPStore(
            host_name=where.master_addr,
            port=where.master_port,
            world_size=where.world_size,
            is_master=where.rank == 0 and not where.agent_store,
            timeout=datetime.timedelta(seconds=timeout_s),
            wait_for_workers=False,
            multi_tenant=True,
        )
    except Exception as error:  # torch's DistNetworkError, DistStoreError, RuntimeError: said in one line
        serves = "torchrun's agent" if where.agent_store else "rank 0" if where.rank else "this rank"
        raise WorldNotAgreed(
            f"rank {where.rank}: no rendezvous store at {where.master_addr}:{where.master_port} "
            f"(served by {serves}) within {timeout_s:g} s: {_first_line(error)}"
        ) from None


def _agree(store: Any, where: StoreAddress, make_run: Callable[[], str]) -> str:
    key = f"{RUN_DIR_KEY}/{where.restart}"
    if where.rank == 0:
        try:
            run_dir = make_run()
        except (ValueError, OSError) as error:
            store.set(key, REFUSED + _first_line(error))
            raise
        store.set(key, run_dir)
        return run_dir
    try:
        said = bytes(store.get(key)).decode()
    except Exception as error:  # DistStoreError on the timeout
        raise WorldNotAgreed(
            f"rank {where.rank}: rank 0 never said the run directory at {where.master_addr}:{where.master_port}: "
            f"{_first_line(error)}"
        ) from None
    if said.startswith(REFUSED):
        raise WorldNotAgreed(f"rank {where.rank}: rank 0 made no run directory: {said.removeprefix(REFUSED)}")
    return said


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
