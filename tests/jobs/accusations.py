"""Who a verdict blames: every host and rank that `wait`, `report` or the JSON accuse of a failure or of
slowness, read from their text, for the fault tests to hold against the fault they injected."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import SlurmCluster, collbench

ACCUSATIONS = (
    re.compile(r"\brank (?P<rank>\d+) on (?P<host>n\d+) (?:failed first|failed after it|died|hung|failed in set-up)"),
    re.compile(r"\brank\(s\) (?P<ranks>[\d,-]+) on (?P<host>n\d+) failed in set-up"),
    re.compile(r"\bnode (?P<host>n\d+) stopped answering"),
    re.compile(r"\bslow host: (?P<host>n\d+)"),
    re.compile(r"\bslow at its own work: rank (?P<rank>\d+) on (?P<host>n\d+)"),
    re.compile(r"\bslowest host: (?P<host>n\d+)"),
    re.compile(r"\b(?:time outlier|straggler): rank (?P<rank>\d+) on (?P<host>n\d+)"),
)


def accused(text: str) -> set[str]:
    """Every host and rank the text blames for a failure or for slowness."""
    found: set[str] = set()
    for pattern in ACCUSATIONS:
        for match in pattern.finditer(text):
            found.add(match.group("host"))
            groups = match.groupdict()
            for spec in filter(None, [groups.get("rank"), groups.get("ranks")]):
                found |= {f"rank {r}" for r in _ranks(spec)}
    return found


def _ranks(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        out += range(int(low), int(high or low) + 1)
    return out


def everything_said(cluster: SlurmCluster, workdir: Path, run: Path, wait_output: str) -> dict[str, str]:
    """wait's output, report's (tables, per-host view, verdict) and the JSON document's problems and analysis."""
    report = collbench("report", str(run), cwd=workdir, env=cluster.env())
    document = json.loads(collbench("report", str(run), "--format", "json", cwd=workdir, env=cluster.env()).stdout)
    return {
        "wait": wait_output,
        "report": report.stdout + report.stderr,
        "JSON": json.dumps({"problems": document["problems"], "analysis": document["analysis"]}),
    }


def assert_accuses_only(said: dict[str, str], allowed: set[str]) -> None:
    for where, text in said.items():
        assert accused(text) <= allowed, f"{where} accuses {accused(text) - allowed}:\n{text}"
