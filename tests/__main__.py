"""`python -m tests [PYTEST ARGS]`: the whole suite as two pytest runs side by side (the README's test command).

The Slurm tests (marker `slurm`) spend their time waiting on the cluster: a job's start, a link slowed by tc,
a timeout run out; the rest keep one core busy. One after the other they took 24 min here (839 s and 585 s of
tests); side by side, about the longer of the two. Each stream is a plain pytest run of its own, with its own
session fixtures (the Slurm cluster in one, a PostgreSQL server and Chromium in each), its output kept in a file
and printed whole when it ends, the quicker first. The exit status is the first stream's that failed.

PYTEST ARGS go to both (--junitxml=PATH as one file each, PATH with the stream's name). With a path, a node
id or a -m of its own, it is one plain pytest run: what was asked for, nothing split. Plain `pytest` still runs
everything in one process, one test after another."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType

STREAMS = {"slurm": "slurm", "rest": "not slurm"}
"""Stream name -> its -m expression: the two cover every test once."""
NICENESS = {"slurm": 0, "rest": 10}
"""The rest yields the cores to the Slurm stream's ranks: a Slurm test's verdict weighs bandwidth figures, and
twelve ranks on two cores beside a CPU-bound local run measured a healthy spread of 123% of the level (its
rail named inconclusive, not bad); the rest only waits longer for a core. Slurm's daemons, which start the
ranks, never run under a stream's niceness."""
NO_TESTS = 5
"""pytest's exit status when a stream selects nothing (`-k` matching no Slurm test): not a failure of the suite."""
POLL_S = 1.0


def main(argv: list[str]) -> int:
    if asks_for_one_run(argv):
        return subprocess.call([sys.executable, "-m", "pytest", *argv])
    with tempfile.TemporaryDirectory(prefix="collbench-streams-") as logs:
        streams = {name: _start(name, marker, argv, Path(logs)) for name, marker in STREAMS.items()}
        _forward_signals([proc for proc, _ in streams.values()])
        print(f"# {len(streams)} pytest streams side by side: " + ", ".join(f"-m '{m}'" for m in STREAMS.values()))
        sys.stdout.flush()
        return combined(_wait_printing(streams))


def combined(codes: dict[str, int]) -> int:
    """The suite's exit status from its streams': the first failure; NO_TESTS only when no stream selected any."""
    failed = [code for code in codes.values() if code not in (0, NO_TESTS)]
    if failed:
        return failed[0]
    return NO_TESTS if all(code == NO_TESTS for code in codes.values()) else 0


def asks_for_one_run(argv: list[str]) -> bool:
    if any(arg in ("-m", "-h", "--help", "--version", "--co", "--collect-only", "--fixtures") for arg in argv):
        return True
    return any(not arg.startswith("-") and ("::" in arg or Path(arg.split("::")[0]).exists()) for arg in argv)


def for_stream(argv: list[str], name: str) -> list[str]:
    """`argv` as stream `name` takes it: a file the two would both write (--junitxml=PATH) gets the stream's name
    (report.xml: report-slurm.xml)."""
    taken = []
    for arg in argv:
        option, equals, path = arg.partition("=")
        if equals and option in ("--junitxml", "--junit-xml"):
            arg = f"{option}={Path(path).with_stem(f'{Path(path).stem}-{name}')}"
        taken.append(arg)
    return taken


def _start(name: str, marker: str, argv: list[str], logs: Path) -> tuple[subprocess.Popen[bytes], Path]:
    log = logs / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-m", marker, *for_stream(argv, name)],
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=functools.partial(os.nice, NICENESS[name]),
        )
    return proc, log


def _wait_printing(streams: dict[str, tuple[subprocess.Popen[bytes], Path]]) -> dict[str, int]:
    started, codes = time.monotonic(), {}
    while len(codes) < len(streams):
        for name, (proc, log) in streams.items():
            if name in codes or proc.poll() is None:
                continue
            codes[name] = proc.returncode
            print(f"\n# ---- stream {name} (-m '{STREAMS[name]}'): exit {proc.returncode} after "
                  f"{time.monotonic() - started:.0f} s ----", flush=True)  # fmt: skip
            sys.stdout.buffer.write(log.read_bytes())
            sys.stdout.flush()
        time.sleep(POLL_S)
    return codes


def _forward_signals(procs: list[subprocess.Popen[bytes]]) -> None:
    """Ctrl-C or CI's SIGTERM reaches both streams as SIGINT, so each stops its own fixtures (the cluster's
    down.sh, its servers) the way an interrupted pytest does; this process waits for them to end."""

    def forward(signum: int, frame: FrameType | None) -> None:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
