"""Every op over real gloo process groups of 2, 3 and 4 ranks: right results, and one deliberately
wrong element in any rank's output is caught and counted on that rank."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectives.layout import LAYOUTS
from tests.conftest import collbench

pytestmark = pytest.mark.integration

OPS = ",".join(LAYOUTS)
TINY = ["bench.sizes=[4K,3000]", "bench.warmup_iters=0", "bench.iters=2", "bench.root=all", f"bench.ops=[{OPS}]"]


def rows(result_stdout: str, workdir: Path) -> list[dict[str, object]]:
    run = next(line for line in result_stdout.splitlines() if line.startswith("# Run directory: "))
    return json.loads((Path(run.removeprefix("# Run directory: ")) / "summary.json").read_text())["rows"]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_every_op_is_right_and_a_corrupted_element_is_caught(n: int, workdir: Path) -> None:
    """With one element of rank n-1's output flipped, every row counts exactly that one wrong element on that
    rank: every other element of every rank's output is right. A clean run passes too (at 3 ranks: one world
    size is enough for that, the counts prove the results at every one)."""
    if n == 3:
        clean = collbench("run", f"ranks={n}", "output_dir=runs", *TINY, cwd=workdir)
        assert clean.returncode == 0, clean.stderr
        assert all(r["wrong"] == 0 for r in rows(clean.stdout, workdir))

    bad_rank = n - 1
    corrupted = collbench("run", f"ranks={n}", f"faults.corrupt_rank={bad_rank}", "output_dir=runs", *TINY, cwd=workdir)
    assert corrupted.returncode == 1
    corrupted_rows = rows(corrupted.stdout, workdir)
    assert {r["op"] for r in corrupted_rows} == set(LAYOUTS)
    assert all(r["ranks_reporting"] == n for r in corrupted_rows)
    assert {r["root"] for r in corrupted_rows if r["op"] == "scatter"} == set(range(n))
    for op, layout in LAYOUTS.items():
        op_rows = [r for r in corrupted_rows if r["op"] == op]
        # rank n-1's output is defined for every op when it is the root, and for unrooted ops always
        checked = [r for r in op_rows if r["root"] in (-1, bad_rank) or op in ("broadcast", "scatter")]
        assert checked, op
        for row in checked:
            assert row["wrong"] == 1, (op, row)
            assert row["wrong_ranks"] == [bad_rank], (op, row)
        unchecked = [r for r in op_rows if r not in checked]
        assert all(r["wrong"] == 0 for r in unchecked), (op, "only the root's output of reduce/gather is defined")
        assert layout.name == op
