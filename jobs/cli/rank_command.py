"""`collbench rank [KEY=VALUE ...]`: one rank of a world another launcher started (torchrun, srun, mpirun,
a Kubernetes TrainJob), started by it once per rank, as nccl-tests' binaries are.

Each rank takes its place from its environment (jobs.launchers.world_place, in the order docs/launchers.md
gives), refusing in one line, exit 2, a world it cannot place, before it connects to anything. Every rank
loads the same config; rank 0 makes the one run directory (launcher external in run.json, `external` naming
who started it) and says its path to the others through the rendezvous store (jobs.runtime.external_rank),
then every rank runs the body collbench's own ranks run (jobs.runtime.rank_job). Rank 0 prints the header
and each row as it measures it (jobs.inspect.live_table.StreamedRows), writes the final files as the run
ends, records the run in the history and its exports, and prints the tables, as `collbench run` does; the
other ranks print nothing. Exit status: rank 0's is the run's (0 passed, 1
failed or #wrong > 0); a rank whose body failed exits 1 with one line.

The rank body is named, not imported (EXTERNAL_RANK_MODULE): this module loads no torch until it runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.cli import nccl_flags
from jobs.cli.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from jobs.cli.options import add_output_dir_override
from jobs.config.model import Config, ConfigError, derive, load_config
from jobs.launchers.runs import check_output_dir, public_config
from jobs.launchers.world_place import WorldPlace, place_from_environment
from jobs.rundir.layout import RunDir

if TYPE_CHECKING:
    from jobs.inspect.live_table import StreamedRows

EXTERNAL_RANK_MODULE = "jobs.runtime.external_rank"
"""Defines run_external_rank(config, environment, dropped, store, timeout_s, make_run) and WorldNotAgreed."""

OUTER_PLACE = ("SLURM_PROCID", "SLURM_STEP_ID", "SUBMITIT_EXECUTOR")
"""What a rank placed by torchrun, mpirun or PMIx drops: inside an srun step they number the launcher's own
processes (its agents, its daemons), and the rank body would read its place from them."""


def add_command(commands: Any) -> None:
    rank = commands.add_parser(
        "rank",
        help="one rank of a world torchrun, srun, mpirun or Kubernetes started: started once per rank",
        description="Run as one rank of a world another launcher started (torchrun, srun, mpirun, a Kubernetes "
        "TrainJob): each rank takes its place from its environment (docs/launchers.md), rank 0 makes one run "
        "directory and prints the tables at the end. Exit status: 0 passed, 1 failed or #wrong > 0, 2 a world "
        "it cannot place or bad input.",
    )
    rank.add_argument(
        "--config", metavar="NAME_OR_PATH", default=None, help="a name from cluster_configs/ or a YAML path"
    )
    add_output_dir_override(rank)
    rank.add_argument(
        "overrides", nargs="*", metavar="KEY=VALUE", help="e.g. bench.ops=[all_reduce] bench.max_bytes=64K"
    )
    nccl_flags.add_flags(rank)
    rank.set_defaults(handler=_cmd_rank)


def rank_config(cfg: Config, place: WorldPlace) -> Config:
    """The config every rank of `place`'s world runs: its ranks the world's size, the rendezvous the world's.
    Refused: a `ranks` the config sets that is not the world's size, and isolate (it starts its own rounds)."""
    if cfg.spec.in_rounds:
        raise ConfigError(f"collbench rank: task: {cfg.task} starts its own rounds of nodes; allowed here: task=sweep")
    if cfg.ranks is not None and cfg.ranks != place.world_size:
        raise ConfigError(
            f"collbench rank: ranks={cfg.ranks}, but {place.launcher} started {place.world_size} ranks "
            f"(rank {place.rank} on {place.host}); leave ranks unset, or set ranks={place.world_size}"
        )
    rendezvous = replace(cfg.rendezvous, master_addr=place.master_addr, master_port=place.master_port)
    return derive(cfg, launcher="local", ranks=place.world_size, nodes=1, rendezvous=rendezvous)


def _cmd_rank(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    place = place_from_environment(os.environ, cfg.rendezvous.master_addr, cfg.rendezvous.master_port)
    cfg = rank_config(cfg, place)
    if place.rank == 0:
        check_output_dir(cfg.output_dir)
    runtime = importlib.import_module(EXTERNAL_RANK_MODULE)
    streamed: list[StreamedRows] = []
    try:
        run_dir, _ = runtime.run_external_rank(
            public_config(cfg),
            place.torch_env(),
            () if place.launcher == "slurm" else OUTER_PLACE,
            _store_fields(place),
            cfg.timeouts.collective_s,
            lambda: _make_run(cfg, place, streamed),
        )
    except runtime.WorldNotAgreed as error:
        print(f"collbench: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as error:  # the rank's status and log hold the traceback: one line here
        text = str(error).strip().splitlines()
        print(f"collbench: rank {place.rank} failed: {text[0] if text else type(error).__name__}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        for rows in streamed:
            rows.stop()
    return _end(RunDir(Path(run_dir))) if place.rank == 0 else EXIT_OK


def _store_fields(place: WorldPlace) -> dict[str, Any]:
    return {
        "rank": place.rank,
        "world_size": place.world_size,
        "master_addr": place.master_addr,
        "master_port": place.master_port,
        "agent_store": place.agent_store,
        "restart": place.restart,
    }


def _make_run(cfg: Config, place: WorldPlace, streamed: list[StreamedRows]) -> str:
    """Rank 0: the run directory, and its header and rows printed as they are recorded (into `streamed`)."""
    from jobs.inspect.live_table import StreamedRows
    from jobs.launchers.external import new_external_run

    run = new_external_run(cfg, place)
    print(
        f"collbench: {place.world_size} ranks on {place.nnodes} node(s) started by {place.launcher}, "
        f"run directory {run.path}",
        file=sys.stderr,
        flush=True,
    )
    streamed.append(StreamedRows(run).start())
    return str(run.path)


def _end(run: RunDir) -> int:
    """Rank 0, its body done: the run's end (final files if rank 0's body left them, the history, the
    exports), then its tables, as `collbench run` prints them."""
    from jobs.cli.outcome import print_outcome
    from jobs.inspect.report import assess
    from jobs.launchers.run_end import end_run

    end_run(run)
    code = print_outcome(assess(run), run, "table")
    print(f"collbench: run directory {run.path}", file=sys.stderr)
    return code if run.summary_file.exists() else max(code, EXIT_FAILED)
