"""Turn plain mappings (merged YAML + overrides) into typed, validated dataclasses.

Every problem is a ConfigError with one line that names the key, the bad value and what is
allowed. Supported field types: bool, int, float, str, Literal[...], list[T], dict[str, str],
T | None and nested dataclasses. A field's metadata may carry "parse", a function that turns
the raw value into the field's value (sizes such as '64M').
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, Union, get_args, get_origin

T = TypeVar("T")


class ConfigError(ValueError):
    """A bad configuration value; its message is one line meant for the user."""


def build(cls: type[T], data: Any, path: str = "") -> T:
    """An instance of dataclass `cls` from `data`, defaults filling the keys it leaves out."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path or 'config'}: expected a mapping of keys, got {_show(data)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = [key for key in data if key not in fields]
    if unknown:
        where = f" under '{path}'" if path else ""
        raise ConfigError(
            f"unknown key '{_join(path, str(unknown[0]))}'; valid keys{where}: {', '.join(sorted(fields))}"
        )
    hints = typing.get_type_hints(cls)
    values = {}
    for name, field in fields.items():
        if name in data:
            values[name] = _convert(data[name], hints[name], field.metadata, _join(path, name))
    return cls(**values)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _show(value: Any) -> str:
    return repr(value) if not isinstance(value, (Mapping, list)) else type(value).__name__


def _convert(value: Any, hint: Any, metadata: Mapping[str, Any], path: str) -> Any:
    parse = metadata.get("parse")
    if parse is not None:
        try:
            return parse(value)
        except ValueError as error:
            raise ConfigError(f"{path}: {error}") from None
    return _convert_type(value, hint, path)


def _convert_type(value: Any, hint: Any, path: str) -> Any:
    origin = get_origin(hint)
    if origin is typing.Literal:
        return _literal(value, get_args(hint), path)
    if origin in (Union, types.UnionType):
        return _optional(value, hint, path)
    if origin is list:
        return _list(value, get_args(hint)[0], path)
    if origin is dict:
        return _dict(value, get_args(hint)[1], path)
    if dataclasses.is_dataclass(hint):
        return build(hint, value, path)  # type: ignore[arg-type]
    return _scalar(value, hint, path)


def _literal(value: Any, choices: tuple[Any, ...], path: str) -> Any:
    if value not in choices:
        raise ConfigError(f"{path}: {value!r} is not allowed; choose one of {', '.join(map(str, choices))}")
    return value


def _optional(value: Any, hint: Any, path: str) -> Any:
    members = [a for a in get_args(hint) if a is not type(None)]
    if value is None and len(members) < len(get_args(hint)):
        return None
    errors = []
    for member in members:
        try:
            return _convert_type(value, member, path)
        except ConfigError as error:
            errors.append(error)
    if len(members) == 1:
        raise errors[0]
    raise ConfigError(f"{path}: {value!r} is not allowed; expected {' or '.join(_describe(m) for m in members)}")


def _describe(hint: Any) -> str:
    if get_origin(hint) is typing.Literal:
        return "one of " + ", ".join(map(str, get_args(hint)))
    return str(_TYPE_WORDS.get(hint, getattr(hint, "__name__", hint)))


def _list(value: Any, item: Any, path: str) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ConfigError(f"{path}: expected a list such as [a, b], got {_show(value)}")
    return [_convert_type(v, item, f"{path}[{i}]") for i, v in enumerate(value)]


def _dict(value: Any, item: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: expected a mapping of names to values, got {_show(value)}")
    return {str(k): _convert_type(v, item, f"{path}.{k}") for k, v in value.items()}


_TYPE_WORDS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _scalar(value: Any, hint: Any, path: str) -> Any:
    if hint is bool and isinstance(value, bool):
        return value
    if hint is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if hint is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if hint is str and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    if hint is Any:
        return value
    raise ConfigError(f"{path}: expected {_TYPE_WORDS.get(hint, hint)}, got {_show(value)}")


def to_plain(obj: Any) -> Any:
    """A dataclass tree as plain dicts and lists, for YAML and JSON."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    return obj
