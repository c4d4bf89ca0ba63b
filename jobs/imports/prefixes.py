"""A launcher's prefix on the lines of an nccl-tests log, recognised and stripped, and the lines split into
one stream per task, rank or host it names, so that processes whose lines interleave are read apart:

- srun --label: `%*d: `, the task id padded to the widest one (Slurm's src/common/write_labelled_message.c),
  `P%u %*d: ` for a component of a heterogeneous job;
- Open MPI --tag-output: `[JOBID,RANK]<stdout>:` (or `<stderr>:`, `<stddiag>:`) right before the text;
  --timestamp-output puts ctime's `Tue Mar  1 10:00:00 2022` before it, or alone before `<stdout>:`
  (ORTE's and PRRTE's iof_base_output.c);
- pdsh and clush: `HOST: `.

A file's prefix is the one standing before nccl-tests' own lines (a `# nThread` line, a device line, a row),
counted over the whole file; lines without it (mpirun's own warnings, Open MPI's untagged lines) are a
stream of their own, read like any other."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_CTIME = r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}"
_STREAM = r"<(?:stdout|stderr|stddiag)>:"
_NCCL_TESTS_LINE = re.compile(
    r"^(?:# (?:nThread|Using devices|nccl-tests version|Collective test|Out of bounds|Avg bus)"
    r"|#\s+Rank\s+\d|\s*\d+\s+\d+\s+[a-z]\w*\s)"
)


@dataclass(frozen=True, slots=True)
class Kind:
    """One launcher's prefix: its name in words and the pattern; the groups task, rank or host name the
    stream."""

    name: str
    pattern: re.Pattern[str]


KINDS = (
    Kind("srun --label ('N: ')", re.compile(r"^ *(?:P(?P<pack>\d+) +)?(?P<task>\d+): ")),
    Kind(
        "Open MPI --tag-output ('[JOB,RANK]<stdout>:')",
        re.compile(rf"^(?:{_CTIME})?\[(?P<job>[^,\]\s]+),(?P<rank>\d+)\]{_STREAM}"),
    ),
    Kind("Open MPI --timestamp-output ('DATE<stdout>:')", re.compile(rf"^{_CTIME}{_STREAM}")),
    Kind("pdsh/clush ('HOST: ')", re.compile(r"^(?P<host>(?=[\w.-]*[A-Za-z])[A-Za-z0-9][\w.-]*): ")),
)


@dataclass(frozen=True, slots=True)
class Line:
    number: int
    """1-based, in the file."""
    text: str
    """Without the prefix."""


@dataclass(slots=True)
class Stream:
    """The lines of one task, rank or host, in the file's order."""

    key: str
    """`srun task 3`, `rank 1`, `host n1`; '' for lines without the prefix (or a prefix naming no one)."""
    host: str = ""
    """The host the prefix names (pdsh, clush)."""
    lines: list[Line] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Split:
    kind: str
    """The prefix's name in words; '' where the lines carry none."""
    stripped: int
    """Lines it was stripped from."""
    streams: list[Stream]


def split_streams(texts: list[str]) -> Split:
    """The file's lines, one stream per name its launcher's prefix gives (all in one where it has none)."""
    kind = _kind_of(texts)
    if kind is None:
        return Split("", 0, [Stream("", lines=[Line(n, text) for n, text in enumerate(texts, start=1)])])
    streams: dict[str, Stream] = {}
    stripped = 0
    for number, text in enumerate(texts, start=1):
        match = kind.pattern.match(text)
        key, host = _name(match) if match else ("", "")
        stream = streams.setdefault(key, Stream(key, host))
        stream.lines.append(Line(number, text[match.end() :] if match else text))
        stripped += match is not None
    return Split(kind.name, stripped, list(streams.values()))


def _kind_of(texts: list[str]) -> Kind | None:
    """The prefix before more of nccl-tests' lines than stand bare; None where no prefix does."""
    bare = sum(bool(_NCCL_TESTS_LINE.match(text)) for text in texts)
    counts = {kind.name: 0 for kind in KINDS}
    for text in texts:
        for kind in KINDS:
            match = kind.pattern.match(text)
            if match and _NCCL_TESTS_LINE.match(text[match.end() :]):
                counts[kind.name] += 1
                break
    best = max(KINDS, key=lambda kind: counts[kind.name])
    return best if counts[best.name] > bare else None


def _name(match: re.Match[str]) -> tuple[str, str]:
    """The stream's key and the host it names."""
    found = match.groupdict()
    if found.get("task") is not None:
        pack = f"component {found['pack']} " if found.get("pack") is not None else ""
        return f"srun {pack}task {int(found['task'])}", ""
    if found.get("rank") is not None:
        return f"rank {int(found['rank'])}", ""
    if found.get("host"):
        return f"host {found['host']}", found["host"]
    return "", ""
