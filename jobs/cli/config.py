"""The `collbench config [SECTION]` command: every config key, its type, its default and what it does.

The listing is generated from the schema's dataclasses and their field docstrings (jobs/config/keys.py),
so it is the reference for the keys; docs/configuration.md explains how a config is put together.
The listing ends with nccl-tests' flags that set those keys (jobs/cli/nccl_flags.py); JSON gives each key
its flag (`nccl_tests_flag`, null where it has none).
"""

from __future__ import annotations

import argparse
import json

from jobs.cli.nccl_flags import table_lines
from jobs.config.keys import TOP, render, section_names, select
from jobs.config.nccl_flags import flag_spellings

POINTER = "Every config key, its type, default and meaning: collbench config [SECTION]"
"""The last line of `run --help` and `submit --help`."""

POINTED_FROM = ("run", "submit")

TEXT = "text"
"""--format text: what `table` was called here before it had every other command's name; an alias of it."""


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `config`, and end the help of the commands that take KEY=VALUE overrides with a pointer to it.

    main.py registers this after `run` and `submit`, so their parsers are there to receive the pointer."""
    names = section_names()
    config = commands.add_parser(
        "config",
        help="every config key: its type, its default and what it does (config [SECTION])",
        description="Every config key with its type, its default (the schema's; a --config file may set its "
        "own) and its docstring, generated from the config schema. Exit status: 0, or 2 for an unknown section.",
    )
    config.add_argument(
        "section",
        nargs="?",
        metavar="SECTION",
        help=f"only this section: {', '.join(names)} ({TOP}: the keys outside any section)",
    )
    config.add_argument(
        "--format",
        choices=("table", "json", TEXT),
        default="table",
        help=f"what to print, as every command spells it (default: table; {TEXT}: its first name, still taken)",
    )
    config.set_defaults(handler=cmd_config)
    for name in POINTED_FROM:
        parser = commands.choices.get(name)
        if parser is not None:
            parser.epilog = POINTER


def cmd_config(args: argparse.Namespace) -> int:
    chosen = select(args.section)  # an unknown section raises ConfigError: main prints its line, exit 2
    keys = [key for section in chosen for key in section.keys]
    if args.format == "json":
        flags = flag_spellings()
        print(json.dumps([{**key.to_plain(), "nccl_tests_flag": flags.get(key.name)} for key in keys], indent=2))
    else:
        print("\n".join([render(chosen), *table_lines(None if args.section is None else [k.name for k in keys])]))
    return 0
