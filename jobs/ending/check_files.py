"""collbench check's verdict (jobs.inspect.check_verdict) as the files a batch script reads: in the run's check/
at the run's end, and in the user's `--output DIR` by the command."""

from __future__ import annotations

from pathlib import Path

from jobs.inspect.check_verdict import CheckOutcome, hostlist

FILES = ("vetted", "cordoned", "cordoned-reasons", "unchecked", "inconclusive")
"""What `write_check_files` leaves in a directory: four hostlists (one line each, empty when none) and one
`HOST REASON` line per cordoned node. `inconclusive`: the nodes the evidence could not settle, neither vetted nor
cordoned, never drained."""


def write_check_files(check: CheckOutcome, folder: Path) -> list[Path]:
    """vetted, cordoned, cordoned-reasons, unchecked and inconclusive in `folder` (made if missing)."""
    verdict = check.verdict
    folder.mkdir(parents=True, exist_ok=True)
    texts = {
        "vetted": hostlist(verdict.vetted),
        "cordoned": hostlist([node.host for node in verdict.cordoned]),
        "cordoned-reasons": "\n".join(f"{node.host} {node.reason}" for node in verdict.cordoned),
        "unchecked": hostlist(verdict.unchecked),
        "inconclusive": hostlist(verdict.inconclusive),
    }
    written = []
    for name in FILES:
        path = folder / name
        path.write_text(texts[name] + "\n" if texts[name] else "", encoding="utf-8")
        written.append(path)
    return written
