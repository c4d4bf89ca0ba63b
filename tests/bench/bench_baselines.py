"""How many runs of a mixed history each baseline takes, under the rule before issue 28 and under today's.

    .venv/bin/python -m tests.bench.bench_baselines

Not part of the test run. It builds one mixed history of finished run directories (written through the
records, as tests/jobs/rundir/synthetic.py does, at all_reduce 1M-4M like the imported nccl-tests log):
healthy 1-node runs of 2 and of 3 ranks, healthy 2-node runs of 4 ranks, a run with faults.slow_rank, a run
with wrong elements on one rank, and an nccl-tests log (2 H100 nodes, 4 ranks) imported twice into two
output dirs. It records them twice, in two temporary SQLite files:

- before: every run directory's record written as it came (so the second import is a second row), with the
  fingerprint of the time (faults left out) and nothing in `excluded`, and held by the old rule written out
  below (OLD_RULE: the same cluster, fingerprint and node count, outcome passed; and `history trend` with no
  filters: one baseline over every passed run);
- after: through `collbench history ingest`'s own path (jobs.history.ingest.ingest: the same results recorded
  once, `excluded` filled by gather), held by today's (jobs.history.queries: the same cluster, fingerprint,
  node count and world size, passed with nothing recorded against it).

For the newest run of each comparable set it prints how many runs its baseline takes under each, and which
runs today's rule leaves out and why.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from sqlalchemy import and_, exists, insert, select

from jobs.config.fingerprint import config_fingerprint
from jobs.config.model import Faults, load_config, to_yaml
from jobs.history import schema
from jobs.history.against import BASELINE_RUNS
from jobs.history.database import History, open_history
from jobs.history.gather import gather
from jobs.history.ingest import ingest
from jobs.history.queries import Comparable, Filters, left_out, past_figures, recorded_run, series, trend
from jobs.rundir.layout import RunDir
from jobs.rundir.records.config import load_run_config
from jobs.rundir.records.rank import HEARTBEAT, STATUS, Beat, HeartbeatPhase, RankState, RankStatus
from jobs.rundir.writing import write_json_atomic
from tests.conftest import REPO
from tests.jobs.rundir.synthetic import result

SIZES = (1 << 20, 2 << 20, 4 << 20)
TREND_SIZE = 1 << 20
IMPORTED_LOG = REPO / "tests" / "jobs" / "imports" / "logs" / "v2.19-each-rank-printed.log"

OLD_RULE = """
    SELECT id FROM runs
    WHERE cluster = :cluster AND config = :config AND nodes = :nodes
      AND started < :before AND run_id != :run_id AND outcome = 'passed'
    ORDER BY started DESC LIMIT 20
"""
"""The baseline of --against-history and `history show` before issue 28 (queries.past_figures then), as SQL."""


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of run in the mixed history."""

    name: str
    count: int
    ranks: int = 2
    nodes: int = 1
    faults: tuple[str, ...] = ()
    wrong_rank: int = -1
    """A rank whose every row has wrong elements (-1: none)."""
    slower: float = 1.0


KINDS = (
    Kind("healthy, 1 node x 2 ranks", 6),
    Kind("healthy, 1 node x 3 ranks", 3, ranks=3),
    Kind("healthy, 2 nodes x 2 ranks", 3, ranks=4, nodes=2),
    Kind("faults.slow_rank=1, 1 node x 2 ranks", 1, faults=("faults.slow_rank=1", "faults.slow_ms=5"), slower=3.0),
    Kind("wrong elements on rank 1, 1 node x 2 ranks", 1, wrong_rank=1),
    Kind("healthy, 1 node x 2 ranks (after the rest)", 2),
)


def local_run(output_dir: Path, kind: Kind, slower: float) -> RunDir:
    """A finished local run of all_reduce at SIZES, as its ranks and its launcher leave it."""
    words = [f"ranks={kind.ranks}", "bench.ops=[all_reduce]", "bench.min_bytes=1M", "bench.max_bytes=4M", *kind.faults]
    cfg = load_config(None, words)
    run = RunDir.create(output_dir, "local")
    run.config_file.write_text(to_yaml(cfg))
    run.update_meta(run_id=run.run_id, launcher="local", world_size=kind.ranks, nodes=kind.nodes, job_id="4000000")
    per_node = kind.ranks // kind.nodes
    now = time.time()
    for rank in range(kind.ranks):
        host = f"n{rank // per_node + 1}"
        lines = [result(rank, host, size, kind.ranks, (20.0 + size / 400) * slower) for size in SIZES]
        if rank == kind.wrong_rank:
            lines = [replace(line, wrong=38) for line in lines]
        status = RankStatus(rank=rank, local_rank=rank % per_node, node_rank=rank // per_node, host=host,
                            pid=4_000_000 + rank, device="cpu", state=RankState.OK, started=now, updated=now,
                            rows=len(lines))  # fmt: skip
        STATUS.write(run.rank_status(rank), status)
        HEARTBEAT.write(run.rank_heartbeat(rank), Beat(rank=rank, host=host, phase=HeartbeatPhase.DONE, at=now))
        run.rank_results(rank).write_text("".join(line.to_json() + "\n" for line in lines))
        write_json_atomic(run.rank_env(rank), {"hostname": host, "torch": "2.13.0", "variables": {}})
    return run


def imported_runs(root: Path) -> list[RunDir]:
    """The nccl-tests log imported into two output dirs: two run directories of the same results."""
    from jobs.cli.main import main

    runs = []
    for name in ("imports-a", "imports-b"):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main(["import", str(IMPORTED_LOG), "--output-dir", str(root / name)]) in (0, 1)
        (path,) = (root / name).iterdir()
        runs.append(RunDir(path))
    return runs


def build(root: Path) -> dict[str, str]:
    """Every run directory of the mixed history, oldest first: run id -> what kind it is."""
    kinds: dict[str, str] = {}
    for run in imported_runs(root):
        kinds[run.run_id] = "imported nccl-tests log, 2 nodes x 2 ranks (H100)"
    for kind in KINDS:
        for i in range(kind.count):
            run = local_run(root / "runs", kind, kind.slower * (1.0 + 0.02 * (i % 3)))
            kinds[run.run_id] = kind.name
            time.sleep(0.01)  # one start after another, as nights are
    return kinds


def record_before(history: History, root: Path) -> None:
    """Each run directory's record as it came: the fingerprint with the faults left out, nothing excluded, and
    the same results imported twice recorded twice."""
    for path in sorted(p for folder in root.iterdir() for p in folder.iterdir() if (p / "run.json").is_file()):
        run = RunDir(path)
        record = gather(run)
        cfg = load_run_config(run)
        then = {"config": config_fingerprint(replace(cfg, faults=Faults())), "excluded": "", "digest": ""}
        with history.engine.begin() as connection:
            key = connection.execute(
                insert(schema.runs).returning(schema.runs.c.id), [{**record.run, **then}]
            ).scalar_one()
            for table in schema.CHILDREN:
                rows = record.children.get(table.name, [])
                if rows:
                    connection.execute(insert(table), [{**row, "run": key} for row in rows])


def newest_of_each_set(history: History) -> list[Comparable]:
    """The newest run of each comparable set (today's key), as what it is held by."""
    points = trend(history, "all_reduce", TREND_SIZE, Filters(), limit=10_000)
    return [Comparable(one.key, last.started, last.run_id) for one in series(points) for last in one.points[-1:]]


def old_baseline(history: History, run_id: str) -> list[str]:
    """The runs the old rule took for `run_id`'s baseline, in the history as recorded before."""
    from sqlalchemy import text

    runs = schema.runs.c
    with history.engine.connect() as connection:
        held = connection.execute(select(schema.runs).where(runs.run_id == run_id)).mappings().one()
        keys = connection.execute(
            text(OLD_RULE),
            {k: held[k] for k in ("cluster", "config", "nodes", "run_id")} | {"before": held["started"]},
        ).scalars()
        return list(connection.execute(select(runs.run_id).where(runs.id.in_(list(keys)))).scalars())


def old_unfiltered_trend(history: History) -> list[str]:
    """`history trend --op all_reduce --size 1M` with no filters, before: one baseline over the last 20
    passed runs of every kind."""
    runs, results = schema.runs.c, schema.results.c
    has_size = exists(select(results.run).where(and_(results.run == runs.id, results.op == "all_reduce",
                                                     results.requested_size == TREND_SIZE)))  # fmt: skip
    query = select(runs.run_id).where(runs.outcome == "passed", has_size).order_by(runs.started.desc())
    with history.engine.connect() as connection:
        return list(connection.execute(query.limit(BASELINE_RUNS)).scalars())


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mixed"
        kinds = build(root)
        with open_history(f"sqlite:///{Path(tmp) / 'before.sqlite'}") as before:
            record_before(before, root)
            with open_history(f"sqlite:///{Path(tmp) / 'after.sqlite'}") as after:
                done = ingest(after, [root / name for name in sorted(p.name for p in root.iterdir())])
                report(before, after, kinds, done.line())


def report(before: History, after: History, kinds: dict[str, str], ingested: str) -> None:
    print(f"a mixed history of {len(kinds)} run directories, all_reduce at 1M-4M:")
    for kind, n in _counted(kinds.values()).items():
        print(f"  {n} x {kind}")
    print(f"recorded today: {ingested}")
    print()
    print("| the newest run of | old rule: runs taken | of them, not comparable or not healthy | today: runs taken "
          "| left out today, and why | the run itself today |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for like in newest_of_each_set(after):
        taken_now = {run for past in past_figures(after, like).values() for run, _ in past}
        taken_then = old_baseline(before, like.run_id)
        mixed = _counted(kinds[run] for run in taken_then if run not in taken_now)
        skipped = left_out(after, like)
        why = "; ".join(f"{kinds[r.run_id]}: {r.why}" for r in skipped.runs) or "none"
        itself = recorded_run(after, like.run_id)
        assert itself is not None
        print(f"| {kinds[like.run_id]} | {len(taken_then)} | {sum(mixed.values())}{_words(mixed)} | {len(taken_now)} "
              f"| {why} | {('left out: ' + itself.excluded) if itself.excluded else 'healthy'} |")  # fmt: skip
    print()
    unfiltered = old_unfiltered_trend(before)
    sets = series(trend(after, "all_reduce", TREND_SIZE, Filters(), limit=10_000))
    taken = ", ".join(str(len(s.baseline.runs)) if s.baseline else "0" for s in sets)
    print(f"`history trend --op all_reduce --size 1M`, no filters: before, one baseline over the {len(unfiltered)} "
          f"passed runs{_words(_counted(kinds[r] for r in unfiltered))}; today {len(sets)} series, one per "
          f"comparable set, their baselines over {taken} "
          "healthy runs (0: too little history, said as such)")  # fmt: skip


def _counted(kinds: Iterable[str]) -> dict[str, int]:
    return dict(Counter(kinds))


def _words(counted: dict[str, int]) -> str:
    return f" ({'; '.join(f'{n} x {kind}' for kind, n in counted.items())})" if counted else ""


if __name__ == "__main__":
    main()
