"""How every record of the run directory is read and written: JSON, typed, versioned, in one place.

A record type names its file, its format version and how to bring an older format up to date. Reading
decodes straight into the record's dataclass (msgspec: one pass, no intermediate dict) when the file is
of the current format; an older format is decoded plain, upgraded step by step and converted. Whatever
cannot be read raises RecordError, one line naming the file, the version or the damage, and what this
collbench reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import msgspec

from jobs.rundir.writing import create_exclusive, write_atomic

R = TypeVar("R")
Plain = dict[str, Any]
Upgrade = Callable[[Plain], Plain]
"""Turns a record of format N, as plain JSON data, into one of format N + 1."""

MISSING_VERSION = 1
"""Files written before records carried a version are format 1."""


class RecordError(ValueError):
    """A record this collbench cannot read: damaged, or of a format it does not know. One line."""


class _Version(msgspec.Struct):
    version: int = MISSING_VERSION


_VERSION = msgspec.json.Decoder(_Version)


@dataclass(frozen=True)
class Format(Generic[R]):
    """One kind of record: its file's name (for messages), its dataclass and its format version."""

    name: str
    """How messages name the kind: run.json, status/rank-N.json, ..."""
    type: type[R]
    version: int
    upgrades: Mapping[int, Upgrade] = field(default_factory=dict)
    """Format N -> the step to N + 1, for every older format this collbench still reads."""
    pretty: bool = False
    """Written indented, for a person to read; records written often or one per line stay compact."""
    _decoder: msgspec.json.Decoder[R] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_decoder", msgspec.json.Decoder(self.type))

    @property
    def oldest(self) -> int:
        return min([self.version, *self.upgrades])

    def version_in(self, data: bytes, where: str) -> int:
        """The format `data` says it is in (MISSING_VERSION when it says none)."""
        try:
            return _VERSION.decode(data).version
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise RecordError(f"{where}: damaged {self.name}, not a JSON object: {_reason(error)}") from None

    def decode(self, data: bytes, where: str) -> R:
        """The record in `data`; `where` names the file (or file:line) in errors."""
        version = self.version_in(data, where)
        if version == self.version:
            return self._typed(data, where)
        if version > self.version:
            raise RecordError(
                f"{where}: {self.name} format {version} is newer than this collbench reads "
                f"(formats {self.oldest} to {self.version}): use the collbench that wrote it, or a newer one"
            )
        if version < self.oldest:
            raise RecordError(
                f"{where}: {self.name} format {version} is older than this collbench reads "
                f"(formats {self.oldest} to {self.version})"
            )
        return self._upgraded(msgspec.json.decode(data), version, where)

    def _typed(self, data: bytes, where: str) -> R:
        try:
            return self._decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise RecordError(f"{where}: damaged {self.name} (format {self.version}): {_reason(error)}") from None

    def _upgraded(self, plain: Plain, version: int, where: str) -> R:
        for step in range(version, self.version):
            plain = self.upgrades[step](plain)
        plain["version"] = self.version
        try:
            return msgspec.convert(plain, self.type)
        except msgspec.ValidationError as error:
            raise RecordError(f"{where}: damaged {self.name} (format {version}): {_reason(error)}") from None

    def encode(self, record: R) -> bytes:
        data = msgspec.json.encode(record)
        return msgspec.json.format(data, indent=1) if self.pretty else data

    def read(self, path: Path) -> R:
        """The record in `path`; OSError when it cannot be opened, RecordError when it cannot be read."""
        return self.decode(path.read_bytes(), str(path))

    def read_if_any(self, path: Path) -> R | None:
        """The record, or None when the file does not exist (yet). Damage still raises RecordError."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        return self.decode(data, str(path))

    def write(self, path: Path, record: R) -> None:
        """Replace the file at once: a reader never sees half of it."""
        write_atomic(path, self.encode(record) + b"\n")

    def create(self, path: Path, record: R) -> bool:
        """Write the file only if it does not exist yet (atomically, whole): False when it did."""
        return create_exclusive(path, self.encode(record) + b"\n")


def _reason(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__
