"""Enums whose values are written into records: str-valued, so they read and compare as their words."""

from __future__ import annotations

from enum import Enum


class Word(str, Enum):
    """An enum that prints as its value (format() of a str mixin changed in Python 3.12)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)
