"""Slurm hostlist expressions, strictly: 'n[01-03,7],gpu[1-2]-ib[0-1]' <-> a list of hosts.

The syntax is Slurm's (scontrol show hostnames / hostlist): items separated by commas; in an
item, any number of bracket groups, each a comma list of numbers or lo-hi ranges; a range
keeps the zero padding of its lower bound; several groups in one item expand as a cartesian
product, the first group varying slowest. Anything else is a BadHostlist, never a guess.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

MAX_HOSTS = 1 << 20
"""Refuse expressions that expand to more hosts than any cluster has (n[0-999999999])."""

_NAME_CHARS = re.compile(r"^[A-Za-z0-9._-]*$")
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


class BadHostlist(ValueError):
    """A malformed hostlist expression."""


def expand_hostlist(expr: str) -> list[str]:
    """Every host named by `expr`, in Slurm's order, duplicates kept."""
    if not isinstance(expr, str) or not expr.strip():
        raise BadHostlist(f"hostlist {expr!r} is empty; expected names such as n[1-4],gpu07")
    hosts: list[str] = []
    for item in _split_items(expr.strip()):
        hosts.extend(_expand_item(item, expr))
        if len(hosts) > MAX_HOSTS:
            raise BadHostlist(f"hostlist {expr!r} expands to more than {MAX_HOSTS} hosts")
    return hosts


def _split_items(expr: str) -> list[str]:
    items, depth, start = [], 0, 0
    for pos, char in enumerate(expr):
        if char == "[":
            depth += 1
            if depth > 1:
                raise BadHostlist(f"hostlist {expr!r} nests brackets at position {pos}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise BadHostlist(f"hostlist {expr!r} closes a bracket it never opened at position {pos}")
        elif char == "," and depth == 0:
            items.append(expr[start:pos])
            start = pos + 1
    if depth:
        raise BadHostlist(f"hostlist {expr!r} leaves a bracket open")
    items.append(expr[start:])
    for item in items:
        if not item:
            raise BadHostlist(f"hostlist {expr!r} has an empty item (two commas, or one at an end)")
    return items


def _expand_item(item: str, expr: str) -> list[str]:
    pieces: list[list[str]] = []
    for pos, text in enumerate(re.split(r"(\[[^\]]*\])", item)):
        if pos % 2:
            pieces.append(_expand_ranges(text[1:-1], expr))
        elif text:
            if not _NAME_CHARS.match(text):
                raise BadHostlist(f"hostlist {expr!r} has an invalid character in {text!r}")
            pieces.append([text])
    return ["".join(parts) for parts in itertools.product(*pieces)]


def _expand_ranges(inner: str, expr: str) -> list[str]:
    if not inner:
        raise BadHostlist(f"hostlist {expr!r} has an empty bracket []")
    numbers: list[str] = []
    for part in inner.split(","):
        match = _RANGE.match(part)
        if not match:
            raise BadHostlist(f"hostlist {expr!r}: {part!r} in brackets is not a number or a lo-hi range")
        lo_text, hi_text = match.groups()
        lo, hi = int(lo_text), int(hi_text if hi_text is not None else lo_text)
        if hi < lo:
            raise BadHostlist(f"hostlist {expr!r}: range {part!r} runs backwards")
        if hi - lo >= MAX_HOSTS:
            raise BadHostlist(f"hostlist {expr!r}: range {part!r} expands to more than {MAX_HOSTS} hosts")
        width = len(lo_text)
        numbers.extend(str(n).zfill(width) for n in range(lo, hi + 1))
    return numbers


def collect_hostlist(hosts: Iterable[str]) -> str:
    """The compact expression for `hosts` (n1,n2,n3,n5 -> 'n[1-3,5]'), duplicates dropped.

    Hosts sharing a prefix and a number width are merged on their trailing number, sorted;
    groups keep the order in which their first host appeared.
    """
    groups: dict[tuple[str, int], set[int]] = {}
    plain: dict[str, None] = {}
    order: list[tuple[str, int] | str] = []
    for host in hosts:
        if not can_be_listed(host):
            raise BadHostlist(f"host name {host!r} cannot be written in a hostlist")
        match = _TRAILING_NUMBER.match(host)
        if not match:
            if host not in plain:
                plain[host] = None
                order.append(host)
            continue
        prefix, digits = match.groups()
        key = (prefix, len(digits) if len(digits) > 1 and digits.startswith("0") else 0)  # "0" is not padded
        if key not in groups:
            groups[key] = set()
            order.append(key)
        groups[key].add(int(digits))
    return ",".join(entry if isinstance(entry, str) else _render_group(entry, groups[entry]) for entry in order)


def readable_hostlist(hosts: Iterable[str]) -> str:
    """For people to read, never for Slurm: collect_hostlist of the names a hostlist can hold, then every other
    name as it is ('n[1-3],n1<x>'), so that a host no Slurm cluster would name still shows in a line."""
    names = list(dict.fromkeys(hosts))
    fit = [name for name in names if can_be_listed(name)]
    odd = [name if name else "''" for name in names if not can_be_listed(name)]
    return ",".join(([collect_hostlist(fit)] if fit else []) + odd)


def can_be_listed(host: str) -> bool:
    """Whether `host` can be written in a hostlist expression."""
    return bool(host) and _NAME_CHARS.match(host) is not None


def _render_group(key: tuple[str, int], numbers: set[int]) -> str:
    prefix, width = key
    ranges = []
    for _, run in itertools.groupby(enumerate(sorted(numbers)), lambda pair: pair[1] - pair[0]):
        values = [n for _, n in run]
        lo, hi = str(values[0]).zfill(width), str(values[-1]).zfill(width)
        ranges.append(lo if lo == hi else f"{lo}-{hi}")
    if len(ranges) == 1 and "-" not in ranges[0]:
        return f"{prefix}{ranges[0]}"
    return f"{prefix}[{','.join(ranges)}]"
