"""The key listing behind `collbench config` is generated from the schema: every field of every section is
there with its docstring, its type in the config's words and its default."""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass, field
from typing import Any

import pytest

from jobs.config.keys import (
    TOP,
    Key,
    UnknownSection,
    all_keys,
    field_docs,
    render,
    section_names,
    sections,
    select,
)
from jobs.config.model import Config
from jobs.config.schema import ConfigError


def schema_fields(cls: type[Any] = Config, prefix: str = "") -> dict[str, dataclasses.Field[Any]]:
    """Every leaf field of the schema by dotted name, found independently of jobs.config.keys."""
    hints = typing.get_type_hints(cls)
    found: dict[str, dataclasses.Field[Any]] = {}
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            found |= schema_fields(hints[f.name], f"{prefix}{f.name}.")
        else:
            found[f"{prefix}{f.name}"] = f
    return found


def by_name() -> dict[str, Key]:
    return {key.name: key for key in all_keys()}


def test_every_field_of_every_section_is_listed_once() -> None:
    names = [key.name for key in all_keys()]
    assert len(names) == len(set(names))
    assert set(names) == set(schema_fields())


@pytest.mark.parametrize("name", sorted(schema_fields()))
def test_every_field_has_a_docstring(name: str) -> None:
    # A field added to the schema without a string literal under it fails here, by name.
    assert by_name()[name].doc.strip(), f"config key {name} has no docstring in its dataclass"


def test_sections_are_top_then_configs_sections_in_order() -> None:
    assert section_names() == tuple(section.name for section in sections())
    expected = (
        TOP,
        "bench",
        "timeouts",
        "rendezvous",
        "slurm",
        "faults",
        "fabric",
        "isolate",
        "check",
        "drain",
        "history",
        "exports",
        "rails",
        "topology",
    )
    assert section_names() == expected
    assert {key.section for key in sections()[0].keys} == {TOP}
    assert all(key.name.startswith(f"{s.name}.") for s in sections()[1:] for key in s.keys)


def test_defaults_are_the_schemas() -> None:
    keys = by_name()
    defaults = Config()
    for name in schema_fields():
        value: Any = defaults
        for part in name.split("."):
            value = getattr(value, part)
        assert keys[name].default == value, name


def test_defaults_are_spelled_as_an_override_would_write_them() -> None:
    keys = by_name()
    shown = {name: keys[name].default_text() for name in keys}
    assert shown["bench.max_bytes"] == "4M"
    assert shown["bench.min_bytes"] == "8"
    assert shown["isolate.sizes"] == "[1G]"
    assert shown["bench.ops"] == "[all_reduce, all_gather, reduce_scatter]"
    assert shown["ranks"] == "null"
    assert shown["bench.check"] == "true"
    assert shown["slurm.partition"] == "''"
    assert shown["env"] == "{}"
    assert shown["timeouts.collective_s"] == "120.0"
    assert shown["output_dir"] == "runs"


def test_types_in_the_configs_words() -> None:
    keys = by_name()
    assert keys["bench.timer"].type == "auto | loop | per_call"
    assert keys["bench.root"].type == "int | all"
    assert keys["slurm.tasks_per_node"].type == "int | null"
    assert keys["bench.max_bytes"].type == "size"
    assert keys["bench.sizes"].type == "list[size]"
    assert keys["slurm.setup"].type == "list[str]"
    assert keys["env"].type == "dict[str, str]"
    assert keys["bench.ops"].type.startswith("list[all_reduce | all_gather | reduce_scatter | ")


def test_section_docstrings_come_from_the_class_not_from_dataclass() -> None:
    faults = select("faults")[0]
    assert faults.doc.startswith("Deliberate faults")
    assert select("timeouts")[0].doc == ""  # dataclass's invented "Timeouts(*, collective_s=...)" is not a doc


@dataclass
class _Sample:
    documented: int = 1
    """Said under the field."""
    bare: int = 2
    other: list[int] = field(default_factory=list)
    """Two lines,
        dedented."""

    def method(self) -> None:
        """Not a field's."""


def test_field_docs_take_the_string_right_under_each_field_only() -> None:
    assert field_docs(_Sample) == {"documented": "Said under the field.", "other": "Two lines,\ndedented."}


def test_unknown_section_is_bad_input_naming_it_and_the_allowed_ones() -> None:
    with pytest.raises(UnknownSection) as raised:
        select("benhc")
    message = str(raised.value)
    assert isinstance(raised.value, ConfigError)
    assert "\n" not in message
    assert "'benhc'" in message
    assert all(name in message for name in section_names())


def test_render_lists_every_key_with_its_default_and_doc() -> None:
    text = render(sections())
    for key in all_keys():
        assert f"  {key.name}: {key.type} = {key.default_text()}\n" in text + "\n"
    assert "-r -1)" in text  # an option and its value are never split across lines
    only_bench = render(select("bench"))
    assert "bench.iters: int = 20" in only_bench
    assert "slurm." not in only_bench


def test_keys_are_plain_json() -> None:
    plain = json.loads(json.dumps([key.to_plain() for key in all_keys()]))
    assert {"key", "section", "type", "default", "doc"} == set(plain[0])
