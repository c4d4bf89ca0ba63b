"""`collbench import FILE...`: nccl-tests' output (its text tables, its -J JSON files) made into an ordinary
run directory with launcher imported, which report, compare, history and the exports read like any run
(jobs/imports reads the files, jobs/launchers/imported.py writes the directory; docs/exports.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jobs.config.model import ConfigError


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = commands.add_parser(
        "import",
        help="make a run directory out of nccl-tests' output (text or JSON), launcher imported",
        description="Read the output of nccl-tests' *_perf binaries (the text they print, 2.10 on, several runs "
        "in one log allowed, a launcher's prefix on each line stripped (srun --label, Open MPI --tag-output or "
        "--timestamp-output, pdsh/clush), rows pasted with no header read with their ranks told by busbw/algbw "
        "or given by --ranks; or their -J JSON files, "
        "JSON_FILE_VERSION 1 to 3) into a new run directory, which "
        "report, compare, history and export read like any run, labelled with the backend, device and versions "
        "the files say (unknown where they do not). The same files imported again into the same --output-dir "
        "write nothing: the run they made is named. Exit status: 0 imported; 1 imported, but the output was cut "
        "short or its run failed; 2 bad input (a damaged row, named with its file and line), with nothing "
        "written.",
    )
    command.add_argument("files", nargs="+", metavar="FILE", help="nccl-tests text output or JSON files")
    command.add_argument("--output-dir", default="runs", help="where the run directory is made (default: runs)")
    command.add_argument(
        "--op", help="the op of tables that do not name their binary (text before nccl-tests 2.17), e.g. all_gather"
    )
    command.add_argument(
        "--ranks",
        type=int,
        help="the ranks of rows printed with no '# Using devices' lines above them (rows pasted alone), where "
        "their busbw/algbw does not tell them (broadcast, reduce, sendrecv); 1 where each process ran alone (a "
        "non-MPI build under mpirun) and printed its own rows",
    )
    command.set_defaults(handler=cmd_import)


def cmd_import(args: argparse.Namespace) -> int:
    from jobs.imports.model import BadImport
    from jobs.imports.read import read_outputs
    from jobs.inspect.report import assess
    from jobs.launchers.imported import import_run

    try:
        job = read_outputs([Path(name) for name in args.files], args.op, args.ranks)
    except BadImport as error:
        raise ConfigError(str(error)) from None
    for note in job.notes:
        print(f"collbench: import: {note}", file=sys.stderr)
    if job.skipped:
        print(
            f"collbench: import: {job.skipped} line(s) that are not nccl-tests' skipped (the first at "
            f"{job.first_skipped})",
            file=sys.stderr,
        )
    imported = import_run(job, args.output_dir, args.files)
    run = imported.run
    if imported.earlier:
        print(f"collbench: import: already imported as {run.run_id} ({run.path}); nothing written", file=sys.stderr)
    else:
        print(f"collbench: import: {job.label.line()}", file=sys.stderr)
    rows = sum(len(table.rows) for table in job.tables)
    ops = ", ".join(dict.fromkeys(table.op for table in job.tables))
    alone = any(table.process is not None for table in job.tables)
    on = f"{len(job.devices)} processes, each alone (nranks 1)" if alone else f"{len(job.devices)} rank(s)"
    print(f"imported {rows} row(s) of {ops} on {on} into {run.path}")
    for cut in job.cut:
        print(f"collbench: import: INCOMPLETE: {cut}", file=sys.stderr)
    if not imported.earlier:
        print(
            f"collbench: import: not in the results history yet: collbench history ingest {run.path}", file=sys.stderr
        )
    return 0 if assess(run).passed else 1
