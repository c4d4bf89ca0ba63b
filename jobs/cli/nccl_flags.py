"""nccl-tests' flags (`-b 8 -e 8G -f 2 -n 20 -d bfloat16`) on the commands that start a sweep.

Each flag (jobs.config.nccl_flags, the table) is a spelling of one config key: it becomes the KEY=VALUE
override it names, ahead of the ones typed, so one schema validates both. A flag with no key here is taken
only to be answered: one line with the key to use instead, or why it has no meaning in collbench.
`collbench config` and every command's --help show the table.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from typing import Any

from jobs.cli.options import NCCL_FLAGS_DEST
from jobs.config.nccl_flags import DTYPES, FLAGS, Flag, flag_overrides, merged, refused_flags, taken_flags

DEST = NCCL_FLAGS_DEST
"""The namespace attribute that holds the flags given, in order: (Flag, value or None)."""


class _Given(argparse.Action):
    """Keeps each flag with its value, in the order typed; what it stands for is said after parsing."""

    def __init__(self, *args: Any, flag: Flag, **kwargs: Any) -> None:
        self.flag = flag
        super().__init__(*args, **kwargs)

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, _: Any = None
    ) -> None:
        given = list(getattr(namespace, DEST, None) or [])
        given.append((self.flag, values))
        setattr(namespace, DEST, given)


def add_flags(command: argparse.ArgumentParser, taken_long: Sequence[str] = ()) -> None:
    """nccl-tests' flags on `command`; a long spelling the command already has for something else (scale's
    --timeout) is left out: its short one stands alone. `taken_long`: those spellings."""
    command.set_defaults(**{DEST: []})
    group = command.add_argument_group(
        "nccl-tests' flags", "each sets the config key it names (the same as KEY=VALUE; collbench config lists them)"
    )
    refused = command.add_argument_group(
        "nccl-tests' flags with no key here", "answered with the key to use instead (exit 2, nothing starts)"
    )
    for flag in FLAGS:
        names = [flag.short] if flag.long in taken_long else [flag.short, flag.long]
        if flag.taken:
            help_text = f"{flag.key}" + (f" ({_values_text(flag)})" if flag.values else "")
            group.add_argument(*names, metavar=flag.metavar, action=_Given, flag=flag, dest=DEST, help=help_text)
        else:
            refused.add_argument(
                *names, metavar=flag.metavar, nargs="?", action=_Given, flag=flag, dest=DEST, help=argparse.SUPPRESS
            )
    refused.description = f"{refused.description}: {', '.join(f.short for f in refused_flags())}"


def _values_text(flag: Flag) -> str:
    shown = DTYPES if flag.short == "-d" else flag.values  # collbench's own type names are taken too, unsaid
    return ", ".join(f"{name}={ours}" if name != ours else name for name, ours in shown.items())


def _as_here_text(flag: Flag) -> str:
    return f"; {flag.short}\N{NO-BREAK SPACE}{flag.as_here} is taken: it is what collbench does" if flag.as_here else ""


def apply(args: argparse.Namespace, loose: str) -> None:
    """The flags on `args` into its overrides (attribute `loose`: overrides or words), ahead of the typed."""
    given = getattr(args, DEST, None)
    if given:
        setattr(args, loose, merged(flag_overrides(given), getattr(args, loose)))


def table_lines(keys: Sequence[str] | None = None, width: int = 100) -> list[str]:
    """`collbench config`'s section of the flags: the taken ones whose key is in `keys` (all where None),
    and with all of them the refused ones with what to use instead."""
    taken = [flag for flag in taken_flags() if keys is None or flag.key in keys]
    if not taken and keys is not None:
        return []
    lines = ["", "nccl-tests' flags (run, submit, scale): each sets the key beside it, as KEY=VALUE does"]
    for flag in taken:
        values = "-1=all" if flag.short == "-r" else _values_text(flag) if flag.values else ""
        lines += _row(f"{flag.spelled()} {flag.metavar}", flag.key + (f"  ({values})" if values else ""), width)
    if keys is None:
        lines += ["", "nccl-tests' flags with no key here (answered in one line, exit 2, nothing starts):"]
        for flag in refused_flags():
            lines += _row(flag.spelled(), flag.refusal + _as_here_text(flag), width)
    return lines


def _row(name: str, text: str, width: int) -> list[str]:
    indent = " " * 31
    wrapped = textwrap.wrap(f"  {name:<28} {text}", width, subsequent_indent=indent, break_on_hyphens=False)
    return [line.replace("\N{NO-BREAK SPACE}", " ") for line in wrapped]
