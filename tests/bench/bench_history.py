"""The results history's costs: ingesting one 4096-rank x 20-size run, a trend query over 10,000 recorded
runs, and the database's size per run, on SQLite and on PostgreSQL (the suite's own server, tests/postgres).

    PYTHONPATH=. .venv/bin/python tests/bench/bench_history.py [--ranks 4096] [--sizes 20] [--runs 10000]

Not part of the test run (root, for the PostgreSQL server). The run directory is built through the records
(every rank's status and results file, rank 0's env file, summary.json with its rows), as a finished run
leaves it: recording reads every rank's results once, for the hosts' verdicts.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from sqlalchemy import func, insert, select

from collectives.results import SummaryRow
from jobs.config.model import load_config, to_yaml
from jobs.history import schema
from jobs.history.database import History, open_history
from jobs.history.gather import gather
from jobs.history.ingest import record_run
from jobs.history.queries import Filters, trend
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import STATUS, RankState, RankStatus
from jobs.rundir.records.summary import SUMMARY, Summary
from jobs.rundir.writing import write_json_atomic
from tests.bench.bench_scale import _write_results
from tests.postgres import PASSWORD, PostgresServer


def row(size: int, ranks: int) -> SummaryRow:
    return SummaryRow(op="all_reduce", size=size, count=size // 4, dtype="float32", redop="sum", root=-1,
                      in_place=True, nranks=ranks, ranks_reporting=ranks, time_us=100.0 + size / 1e4, algbw=1.0,
                      busbw=1.9, wrong=0, slowest_rank=7, slowest_host="n1", slowest_time_us=120.0, fastest_rank=0,
                      fastest_host="n0", fastest_time_us=90.0, wrong_ranks=[], page_faults_per_iter=0.0,
                      timer="loop", requested_size=size)  # fmt: skip


def build_run(root: Path, ranks: int, sizes: int) -> RunDir:
    cfg = load_config("slurm", [f"nodes={ranks // 8}", "slurm.tasks_per_node=8"])
    run = RunDir.create(root, "slurm")
    run.config_file.write_text(to_yaml(cfg))
    run.update_meta(run_id=run.run_id, launcher="slurm", world_size=ranks, nodes=ranks // 8, job_id="777")
    now = time.time()
    for rank in range(ranks):
        status = RankStatus(rank=rank, local_rank=rank % 8, node_rank=rank // 8, host=f"n{rank // 8}", pid=rank,
                            device="cuda", state=RankState.OK, started=now, updated=now)  # fmt: skip
        STATUS.write(run.rank_status(rank), status)
        _write_results(run, rank, f"n{rank // 8}", ranks, sizes, now)  # read for the hosts' verdicts
    write_json_atomic(run.rank_env(0), {"hostname": "n0", "torch": "2.13.0", "cuda": "12.4", "nccl": "2.21.5"})
    rows = [row(8 << i, ranks) for i in range(sizes)]
    SUMMARY.write(run.summary_file, Summary(run_id=run.run_id, passed=True, rows=rows))
    return run


def fill(history: History, template: RunDir, runs: int) -> None:
    """`runs` more runs like `template`, a night apart, written straight through the tables."""
    record = gather(template)
    with history.engine.begin() as connection:
        for start in range(0, runs, 500):
            batch = [{**record.run, "run_id": f"bench-{n:06d}", "started": 1.6e9 + n * 86400.0}
                     for n in range(start, min(start + 500, runs))]  # fmt: skip
            keys = connection.execute(insert(schema.runs).returning(schema.runs.c.id), batch).scalars().all()
            for table in schema.CHILDREN:
                rows = record.children.get(table.name, [])
                if rows:
                    connection.execute(insert(table), [{**r, "run": key} for key in keys for r in rows])


def measure(name: str, url: str, run: RunDir, runs: int, size_of: callable) -> list[str]:  # type: ignore[valid-type]
    history = open_history(url)
    t0 = time.perf_counter()
    record_run(history, run)
    ingest_s = time.perf_counter() - t0
    fill(history, run, runs - 1)
    t0 = time.perf_counter()
    points = trend(history, "all_reduce", 8 << 10, Filters(nodes=run.read_meta().nodes), limit=runs)
    trend_s = time.perf_counter() - t0
    with history.engine.connect() as connection:
        count = connection.execute(select(func.count()).select_from(schema.runs)).scalar_one()
    per_run = size_of(history) / count
    history.close()
    assert len(points) == count == runs
    return [
        f"| {name} | {ingest_s:.2f} s | {trend_s * 1000:.0f} ms ({len(points)} points) | {per_run / 1024:.1f} KiB |"
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=4096)
    parser.add_argument("--sizes", type=int, default=20)
    parser.add_argument("--runs", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = build_run(Path(tmp) / "runs", args.ranks, args.sizes)
        db = Path(tmp) / "history.sqlite"
        lines = ["| database | ingest of one run | trend over all runs | size per run |", "|---|---|---|---|"]
        lines += measure("SQLite", f"sqlite:///{db}", run, args.runs, lambda h: db.stat().st_size)
        server = PostgresServer.start()
        os.environ["PGPASSWORD"] = PASSWORD
        try:
            url = server.new_database()

            def pg_size(history: History) -> float:
                with history.engine.connect() as connection:
                    return float(
                        connection.execute(select(func.pg_database_size(func.current_database()))).scalar_one()
                    )

            lines += measure("PostgreSQL 15", url, run, args.runs, pg_size)
        finally:
            server.stop()
    print(f"{args.ranks} ranks x {args.sizes} sizes; {args.runs} runs recorded")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
