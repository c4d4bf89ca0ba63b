"""One spelling for each option across the commands, and a wrong spelling answered with the right one.

`--output-dir DIR` is where runs live (looked up by id, and created by run, submit, isolate, scale and
check); `--output PATH` is the file or folder a command writes besides what it prints; `--config` is a
YAML config (name or path); `--db` the results history's URL; `--format table|json|...` what is printed.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from typing import Any

NCCL_FLAGS_DEST = "nccl_flags"
"""Where jobs/cli/nccl_flags.py's flags land: listed apart from a command's own options."""

RUNS_DIR = "runs"
"""Where ids are looked up when no --output-dir is given."""

OTHER_SPELLINGS: dict[str, tuple[str, ...]] = {
    "--output-dir": ("--out-dir", "--outdir", "--output_dir", "--runs", "--run-dir"),
    "--output": ("--out", "--json", "--output-file", "--file"),
    "--config": ("--config-file", "--cfg", "--config-path"),
    "--config-label": ("--config-name",),
    "--db": ("--history-url", "--history", "--url", "--database"),
    "--format": ("--fmt", "--output-format"),
    "--format json": ("--json",),
    "--format csv": ("--csv",),
    "--dry-run": ("--dryrun", "--dry_run"),
}
"""The one spelling -> the others people type (or that older collbench took). A command that kept an old
spelling as an alias registers it itself; elsewhere the old spelling is answered with this one."""


def unknown_option_error(command: argparse.ArgumentParser, name: str, tokens: Sequence[str]) -> str:
    """The one line for `tokens` that collbench NAME does not take: the first unknown option, what the
    command allows, and the spelling it most likely meant."""
    own = [action for action in command._actions if action.option_strings and action.dest != NCCL_FLAGS_DEST]
    options = sorted({action.option_strings[0] for action in own} - {"-h"})
    spellings = options + [
        spelling
        for action in command._actions
        if action.dest == NCCL_FLAGS_DEST and action.help != argparse.SUPPRESS
        for spelling in action.option_strings
    ]
    unknown = next((token for token in tokens if token.startswith("-")), None)
    if unknown is None:
        return f"collbench {name}: unrecognized arguments: {' '.join(tokens)}"
    said = unknown.split("=", 1)[0]
    meant = _meant(said, spellings)
    hint = f"; did you mean {meant}?" if meant else ""
    flags = " and nccl-tests' flags (collbench config lists them)" if len(spellings) > len(options) else ""
    return f"collbench {name}: {said} is not an option here; allowed: {', '.join(options)}{flags}{hint}"


def _meant(said: str, options: Sequence[str]) -> str:
    for right, others in OTHER_SPELLINGS.items():
        if said in others and right.split()[0] in options:
            return right
    close = difflib.get_close_matches(said, options, n=1, cutoff=0.6)
    return close[0] if close else ""


def command_parser(parser: argparse.ArgumentParser, argv: Sequence[str]) -> tuple[argparse.ArgumentParser, str]:
    """The parser of the (sub)command `argv` names, and its name ('report', 'history list')."""
    names: list[str] = []
    for token in argv:
        choices = next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if choices is None:
            break
        if token in choices:
            parser = choices[token]
            names.append(token)
    return parser, " ".join(names)


def add_output_dir_override(command: argparse.ArgumentParser) -> None:
    """--output-dir on a command that starts runs: the config's output_dir, as `output_dir=DIR` says it."""
    command.add_argument(
        "--output-dir",
        dest="output_dir_override",
        metavar="DIR",
        default=None,
        help="where the run directory is created (the config's output_dir; same as output_dir=DIR)",
    )


def add_output_dir(command: argparse.ArgumentParser, looks_up: str, creates: str) -> None:
    """--output-dir on a command that both looks ids up and starts (isolate, scale): default None, so that
    only a given one sets the new run's output_dir (lookups fall back to RUNS_DIR)."""
    command.add_argument(
        "--output-dir",
        metavar="DIR",
        default=None,
        help=f"where runs live: {looks_up} look ids up there (default: {RUNS_DIR}); a new {creates} is created "
        "there (the config's output_dir)",
    )


def with_output_dir(overrides: list[str], output_dir: str | None) -> list[str]:
    """KEY=VALUE `overrides` with --output-dir's, last, so that it wins."""
    return [*overrides, f"output_dir={output_dir}"] if output_dir else overrides


class Parser(argparse.ArgumentParser):
    """collbench's parsers, each subcommand's too: an option is spelled whole (no abbreviations, which would
    take `report --out` for --output-dir), so a wrong spelling is answered by unknown_option_error."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
