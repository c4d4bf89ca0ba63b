"""Every config key with its type, default and docstring, read from the schema itself.

The schema is the dataclasses `Config` and its sections (jobs/config/model.py, collectives/settings.py,
slurm/settings.py, and jobs/config/*_settings.py: fabric, isolate, check, history, exports). Each field
carries its documentation as a string literal right under it (as torchtitan's config does); Python keeps
no such attribute, so the class's source is parsed with `ast`.
`collbench config` prints what this module returns, so the list of keys cannot drift from the schema: a
field added without a docstring shows up with an empty `doc`, and tests/jobs/config/test_keys.py fails on it.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import re
import textwrap
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Union, get_args, get_origin

from collectives.settings import parse_size_list
from collectives.sizes import format_size, parse_size
from jobs.config.model import Config
from jobs.config.schema import ConfigError, to_plain

TOP = "top"
"""The pseudo-section of the keys that sit at the top of a config (launcher, ranks, nodes, ...)."""

_PARSED_TYPES: dict[Callable[..., Any], str] = {parse_size: "size", parse_size_list: "list[size]"}
"""Fields whose metadata names one of these parsers take that spelling rather than their Python type."""


@dataclass(frozen=True, slots=True)
class Key:
    """One config key as `collbench config` shows it."""

    name: str
    """The dotted name an override uses: `ranks`, `bench.max_bytes`."""
    section: str
    """The section it belongs to, or TOP."""
    type: str
    """Its type in the config's own words: `int`, `size`, `auto | loop | per_call`, `int | null`."""
    default: Any
    """The schema's default as plain data (what a config that leaves the key out gets)."""
    doc: str
    """The field's docstring, dedented; empty when the field has none."""

    def default_text(self) -> str:
        """The default as one would write it in YAML or an override; sizes in their exact K/M/G spelling."""
        if self.type == "size" and isinstance(self.default, int):
            return format_size(self.default)
        if self.type == "list[size]" and isinstance(self.default, list):
            return "[" + ", ".join(format_size(size) for size in self.default) + "]"
        return _yaml_value(self.default)

    def to_plain(self) -> dict[str, Any]:
        return {"key": self.name, "section": self.section, "type": self.type, "default": self.default, "doc": self.doc}


@dataclass(frozen=True, slots=True)
class Section:
    name: str
    """A section's key in the YAML (`bench`), or TOP."""
    doc: str
    """The section class's own docstring, if it has one."""
    keys: tuple[Key, ...]


def sections() -> tuple[Section, ...]:
    """The top-level keys first, then every section in the order Config declares them."""
    return _sections()


def section_names() -> tuple[str, ...]:
    """TOP and the sections, from Config's fields alone (no source is parsed)."""
    hints = typing.get_type_hints(Config)
    return (TOP, *(f.name for f in dataclasses.fields(Config) if dataclasses.is_dataclass(hints[f.name])))


def all_keys() -> tuple[Key, ...]:
    return tuple(key for section in sections() for key in section.keys)


@cache
def _sections() -> tuple[Section, ...]:
    top: list[Key] = []
    nested: list[Section] = []
    hints = typing.get_type_hints(Config)
    docs = field_docs(Config)
    for field in dataclasses.fields(Config):
        hint = hints[field.name]
        if dataclasses.is_dataclass(hint) and isinstance(hint, type):
            nested.append(_section(field.name, hint))
        else:
            top.append(_key(field, hint, field.name, TOP, docs))
    return (Section(TOP, "Keys at the top of a config, outside any section.", tuple(top)), *nested)


def _section(name: str, cls: type[Any]) -> Section:
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    keys = tuple(
        _key(field, hints[field.name], f"{name}.{field.name}", name, docs) for field in dataclasses.fields(cls)
    )
    return Section(name, class_doc(cls), keys)


def _key(field: dataclasses.Field[Any], hint: Any, name: str, section: str, docs: dict[str, str]) -> Key:
    parse = field.metadata.get("parse")
    type_text = _PARSED_TYPES.get(parse, "") if parse is not None else ""
    return Key(
        name=name,
        section=section,
        type=type_text or type_name(hint),
        default=to_plain(_default(field)),
        doc=docs.get(field.name, ""),
    )


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    raise ValueError(f"config field {field.name!r} has no default; every config key needs one")


def field_docs(cls: type[Any]) -> dict[str, str]:
    """Each field's docstring: the string literal that follows its annotated assignment in the class body."""
    body = _class_node(cls).body
    docs: dict[str, str] = {}
    for statement, following in itertools.pairwise(body):
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


def class_doc(cls: type[Any]) -> str:
    """The class's own docstring (dataclass invents one from the signature when there is none: not that)."""
    return ast.get_docstring(_class_node(cls)) or ""


def _class_node(cls: type[Any]) -> ast.ClassDef:
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    node = tree.body[0]
    if not isinstance(node, ast.ClassDef):
        raise TypeError(f"{cls.__qualname__}: its source does not start with a class statement")
    return node


def type_name(hint: Any) -> str:
    """A type in the config's words: Literal choices joined by |, None as null (YAML), list[...] and dict[...]."""
    origin = get_origin(hint)
    if origin is typing.Literal:
        return " | ".join(str(choice) for choice in get_args(hint))
    if origin in (Union, types.UnionType):
        return " | ".join("null" if arg is type(None) else type_name(arg) for arg in get_args(hint))
    if origin is list:
        return f"list[{type_name(get_args(hint)[0])}]"
    if origin is dict:
        key, value = get_args(hint)
        return f"dict[{type_name(key)}, {type_name(value)}]"
    return str(getattr(hint, "__name__", hint))


def _yaml_value(value: Any) -> str:
    """Plain data spelled as in a YAML flow or an override: null, true, '', [a, b], {k: v}."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value if value else "''"
    if isinstance(value, list):
        return "[" + ", ".join(_yaml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_yaml_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


class UnknownSection(ConfigError):
    """A section name that is not one of the config's; the one-line message names it and the ones allowed
    (a ConfigError, so the CLI answers it as bad input: exit 2)."""


def select(name: str | None) -> tuple[Section, ...]:
    """Every section, or the one named."""
    if name is None:
        return sections()
    for section in sections():
        if section.name == name:
            return (section,)
    raise UnknownSection(f"no config section {name!r}; allowed: {', '.join(section_names())}")


def render(chosen: tuple[Section, ...], width: int = 100) -> str:
    """The keys as text: per section a heading, then per key its name, type and default, and its doc indented."""
    out = [
        "# every config key: its type, its default (the schema's; a --config file may set its own),",
        "# and what it does. Set one with an override: collbench run bench.iters=50",
    ]
    for section in chosen:
        out += ["", f"{section.name}:"]
        if section.doc:
            out += _wrap(section.doc, width, "  ")
        for key in section.keys:
            out.append(f"  {key.name}: {key.type} = {key.default_text()}")
            out += _wrap(key.doc or "(no docstring)", width, "      ")
    return "\n".join(out)


_OPTION_WITH_NEGATIVE = re.compile(r"(?<=\s)(-\w+) (-\d)")
"""An option and a negative value (nccl-tests' `-r -1`): wrapped together, never across lines."""


def _wrap(text: str, width: int, indent: str) -> list[str]:
    """One paragraph; words such as `-G` and options such as `-r -1` stay whole."""
    kept = _OPTION_WITH_NEGATIVE.sub("\\1\N{NO-BREAK SPACE}\\2", " ".join(text.split()))
    lines = textwrap.wrap(
        kept, width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False
    )
    return [line.replace("\N{NO-BREAK SPACE}", " ") for line in lines]
