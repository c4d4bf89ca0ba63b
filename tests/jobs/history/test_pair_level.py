"""collbench check's expected level from the results history: the baseline of healthy 2-node runs on the
cluster, at the check size where it is highest; nothing with too little history or on another cluster."""

from __future__ import annotations

import statistics
from pathlib import Path

from sqlalchemy import update

from jobs.config.model import load_config
from jobs.history import schema
from jobs.history.database import open_history
from jobs.history.hook import expected_pair_busbw
from jobs.history.ingest import record_run
from jobs.history.queries import Filters, pair_level, trend
from tests.jobs.rundir import synthetic


def test_the_level_of_a_pair_is_the_baseline_of_healthy_two_node_runs(history_url: str, tmp_path: Path) -> None:
    history = open_history(history_url)
    runs = [synthetic.sweep_run(tmp_path, slower=s) for s in (1.0, 1.2, 0.9)]
    for run in runs:
        record_run(history, run)
    sizes = list(synthetic.SIZES)
    assert pair_level(history, "local", "all_reduce", sizes) is None, "one-node runs say nothing of a pair"
    with history.engine.begin() as connection:
        connection.execute(update(schema.runs).values(nodes=2))
    found = pair_level(history, "local", "all_reduce", sizes)
    assert found is not None
    size, level = found
    points = trend(history, "all_reduce", size, Filters(nodes=2))
    assert size == max(sizes) and level.median == statistics.median(p.value for p in points)
    assert pair_level(history, "elsewhere", "all_reduce", sizes) is None
    history.close()
    cfg = load_config(None, [f"history.url={history_url}", f"check.sizes=[{','.join(map(str, sizes))}]"])
    said: list[str] = []
    expected = expected_pair_busbw(cfg, "local", said.append)
    assert expected is not None and expected[0] == level.median, said
    assert expected[1] == (
        f"the median of the last 3 healthy 2-node all_reduce runs at {size} B on local in the history "
        "(1 rank(s) a node, gloo on cpu)"
    )
    eight_a_node = load_config(None, [f"history.url={history_url}", "slurm.tasks_per_node=8"])
    assert expected_pair_busbw(eight_a_node, "local", said.append) is None, "pairs of another shape say nothing"


def test_isolate_takes_its_level_from_the_history_and_says_so(history_url: str, tmp_path: Path) -> None:
    import argparse

    from jobs.cli.isolate_setup import with_level

    history = open_history(history_url)
    sizes = ",".join(map(str, synthetic.SIZES))
    words = ["nodes=4", "slurm.tasks_per_node=1", f"history.url={history_url}", "history.cluster=local",
             f"isolate.sizes=[{sizes}]"]  # fmt: skip
    args = argparse.Namespace(config="testcluster", words=words)
    cfg = load_config("testcluster", [*args.words, "task=isolate"])
    thin, _ = with_level(cfg)
    assert thin.isolate.expected_busbw == 0 and thin.isolate.expected_from.startswith("too little history on local")
    for run in [synthetic.sweep_run(tmp_path, slower=s) for s in (1.0, 1.2, 0.9)]:
        record_run(history, run)
    with history.engine.begin() as connection:
        connection.execute(update(schema.runs).values(nodes=2))
    found = pair_level(history, "local", "all_reduce", list(synthetic.SIZES))
    assert found is not None
    level = with_level(cfg)[0].isolate
    assert level.expected_busbw == found[1].median
    assert level.expected_from == (
        f"the median of the last 3 healthy 2-node all_reduce runs at {found[0]} B on local in the history "
        "(1 rank(s) a node, gloo on cpu)"
    )
    assert (
        with_level(load_config("testcluster", [*args.words, "isolate.expected_busbw=5"]))[0].isolate.expected_from == ""
    )
