"""What every `collbench history` view shares: the history it opens (readers never create one), its filters
(an --op that is no collective is bad input), and the words said on stderr when nothing matches: a filter that
matches nothing names the filters; a name the history has never seen is named with the ones it knows."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from jobs.config.model import ConfigError, load_config

if TYPE_CHECKING:
    from jobs.history.database import History
    from jobs.history.queries import Filters

KNOWN_SHOWN = 20
"""The names the history knows, listed when one it has never seen is asked for: at most this many."""


def history_url(args: argparse.Namespace) -> str:
    """--db, else the history.url of --config (loaded only then)."""
    from jobs.history.database import resolve_history_url

    return resolve_history_url(args.history_url, lambda: load_config(args.config, []))


def open_view(args: argparse.Namespace) -> History:
    """The history the view reads (`ingest`, the one view that records, may start a new one; the others
    never create a database): `with open_view(args) as history:` closes it."""
    from jobs.history.database import open_history

    if args.view != "ingest":
        return open_history(history_url(args), must_exist=True)
    create_dir = load_config(args.config, []).history.create_dir
    return open_history(history_url(args), create_dir=create_dir)


def view_filters(args: argparse.Namespace) -> Filters:
    """The view's filters; an --op that is no collective at all is bad input, before the history is opened."""
    from jobs.history.queries import Filters

    check_op(args.op)
    return Filters(
        args.since, args.fingerprint, args.cluster, args.nodes, args.op, args.outcome, world_size=args.world_size
    )


def check_op(op: str | None) -> None:
    from difflib import get_close_matches

    from collectives.layout import LAYOUTS

    if op is None or op in LAYOUTS:
        return
    close = get_close_matches(op, LAYOUTS, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ConfigError(f"--op {op!r} is not a collective{hint}; allowed: {', '.join(LAYOUTS)}")


FILTER_FLAGS = ("since", "fingerprint", "cluster", "nodes", "world_size", "op", "outcome")
"""The filters' attributes, in the order their flags are said (--world-size for world_size)."""


def filter_words(args: argparse.Namespace, *more: str) -> str:
    """The filters given, as typed (--since as the date it stands for)."""
    words = []
    for name in FILTER_FLAGS:
        value, flag = getattr(args, name, None), "--" + name.replace("_", "-")
        if value is None:
            continue
        if name == "since":
            value = time.strftime("%Y-%m-%d %H:%M", time.localtime(value))
        words.append(f"{flag} {value}")
    return " ".join([*words, *more])


def say(line: str) -> None:
    print(f"collbench: history: {line}", file=sys.stderr)


def never_seen(history: History, names: dict[str, str | None]) -> list[str]:
    """A line for each name given (kind -> the name, None when not given) that the history has never seen,
    with the ones it knows; a fingerprint is known by its first digits."""
    from jobs.history.queries import known_names

    said = []
    for kind, name in names.items():
        if not name:
            continue
        known = known_names(history, kind)
        if any(k.startswith(name) if kind == "config" else k == name for k in known):
            continue
        said.append(f"the history has never seen {KINDS[kind]} {name!r}; {listed(known, kind)}")
    return said


KINDS = {"op": "the op", "cluster": "a cluster", "config": "a config fingerprint", "host": "a host",
          "switch": "a switch or switch link"}  # fmt: skip


def listed(known: list[str], kind: str) -> str:
    if not known:
        return "it holds none yet"
    shown = ", ".join(known[:KNOWN_SHOWN])
    more = f", and {len(known) - KNOWN_SHOWN} more" if len(known) > KNOWN_SHOWN else ""
    name = {"config": "config fingerprints", "switch": "switches", "op": "ops"}.get(kind, f"{kind}s")
    return f"the {name} it knows: {shown}{more}"


def say_unmatched(history: History, args: argparse.Namespace, *more: str) -> None:
    """Nothing matched the view's filters: say which names it has never seen, else that nothing matches."""
    unknown = never_seen(history, {"op": args.op, "cluster": args.cluster, "config": args.fingerprint})
    for line in unknown:
        say(line)
    if not unknown:
        words = filter_words(args, *more)
        say(f"no run matches {words}" if words else f"no run in {history.where}")
