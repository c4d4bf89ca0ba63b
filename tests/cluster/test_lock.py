"""The test cluster's lock (tests/conftest.py): a second session waits for the first and says who holds it."""

from __future__ import annotations

import select
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

HOLD = """
import sys
from pathlib import Path
from tests.conftest import cluster_lock
with cluster_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
print("released", flush=True)
"""


def holder(path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_a_second_holder_waits_for_the_first_and_names_it(tmp_path: Path) -> None:
    path = tmp_path / "cluster.lock"
    first = holder(path)
    second = None
    try:
        assert first.stdout is not None and first.stdout.readline() == "held\n"
        second = holder(path)
        assert second.stderr is not None
        said, _, _ = select.select([second.stderr], [], [], 30)
        assert said, "the second holder said nothing in 30 s"
        waiting = second.stderr.readline()
        assert waiting == f"# waiting for the test cluster: pytest pid {first.pid} holds {path}\n", waiting
        assert second.poll() is None, "it waits"
        first.communicate("", timeout=30)
        assert first.returncode == 0
        out, err = second.communicate("", timeout=30)
        assert (out, second.returncode) == ("held\nreleased\n", 0), err
        assert path.read_text() == f"pytest pid {second.pid}\n", "the holder's pid, not both"
    finally:
        for proc in (first, second):
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait()
