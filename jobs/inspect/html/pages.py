"""The Jinja2 environment every page is rendered with: the package's templates, auto-escaping on (a value
from a host, a log or an error shows as text), and an undefined name an error, never an empty string."""

from __future__ import annotations

import time
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from collectives.sizes import format_size

TEMPLATES = Path(__file__).with_name("templates")


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["size"] = size_words
    env.filters["when"] = when
    return env


def render(template: str, **context: Any) -> str:
    """The page `template` (a file of templates/) rendered with `context`."""
    return environment().get_template(template).render(**context)


def size_words(nbytes: int) -> str:
    """4194304 -> '4M (4194304 B)': the short spelling a user types, with the exact bytes."""
    short = format_size(nbytes)
    return f"{short} ({nbytes} B)" if short != str(nbytes) else f"{nbytes} B"


def when(started: float) -> str:
    """A time as the history's tables print it, in this machine's local time."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started))
