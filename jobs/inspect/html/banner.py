"""The block every page opens with: the verdict in one line, the exit status in words, what stands behind
it (the problems, what the verdict named), and the command that made what the page shows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from jobs.config.exit_codes import EXIT_INCONCLUSIVE
from jobs.config.model import Config
from jobs.rundir.layout import RunDir

LINES_SHOWN = 100
"""At most this many lines under the verdict (a failure of 16,384 ranks is a line each); then how many more."""

EXIT_WORDS: dict[str, dict[int, str]] = {
    "run": {
        0: "every check passed",
        1: "failed: a rank failed, the job did not complete, a row is incomplete, #wrong > 0, busbw under "
        "--min-busbw, or a regression against the history",
    },
    "isolate": {
        0: "nothing found",
        1: "a bad node, rail or link named, or the job failed",
        EXIT_INCONCLUSIVE: "nothing confirmed, but a node, rail or link inconclusive: drain nothing for it",
    },
    "check": {
        0: "every node vetted",
        1: "a node cordoned or a link slow",
        4: "the check could not run or settle: drain nothing for it",
        EXIT_INCONCLUSIVE: "nothing cordoned, but a node, rail or link inconclusive: drain nothing for it",
    },
    "sweep": {0: "every node count completed", 1: "a node count failed, did not finish or was not submitted"},
    "compare": {0: "no regression", 1: "a regression, an incomplete row, or nothing comparable"},
    "trend": {0: "the trend, for reading: it judges nothing"},
}


@dataclass(frozen=True, slots=True)
class Banner:
    headline: str
    exit_code: int
    kind: str
    """Which command's exit codes: a key of EXIT_WORDS."""
    lines: list[str] = field(default_factory=list)
    more: int = 0
    """Lines left out beyond LINES_SHOWN."""

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    @property
    def inconclusive(self) -> bool:
        return self.exit_code == EXIT_INCONCLUSIVE

    @property
    def exit_words(self) -> str:
        return EXIT_WORDS[self.kind].get(self.exit_code, "see the lines below")


def banner(headline: str, exit_code: int, kind: str, lines: Sequence[str] = ()) -> Banner:
    shown = list(lines)
    return Banner(headline, exit_code, kind, shown[:LINES_SHOWN], max(0, len(shown) - LINES_SHOWN))


@dataclass(frozen=True, slots=True)
class Command:
    text: str
    note: str = ""


def run_command(run: RunDir, cfg: Config) -> Command:
    """The run directory records no command line: the command that runs its config again, said as such."""
    config = str(run.config_file)
    if cfg.launcher == "imported":
        files = " ".join(run.read_meta().imported_from) or "FILE"
        return Command(f"collbench import {files}", "imported from nccl-tests' output: the files it read")
    command = cfg.spec.command or f"collbench {'run' if cfg.launcher == 'local' else 'submit'}"
    text = f"{command} --config {config}"
    words = (
        f"{cfg.launcher}, backend {cfg.backend}, {cfg.nodes} node(s), {cfg.world_size} rank(s); the run directory "
        "keeps its resolved config, not the command line: this runs that config again"
    )
    return Command(text, words)
