"""docs/architecture.md names every module of the three packages: a module added without its row fails here."""

from __future__ import annotations

from tests.conftest import REPO


def test_the_architecture_names_every_module() -> None:
    text = (REPO / "docs" / "architecture.md").read_text()
    modules = [
        path
        for package in ("jobs", "collectives", "slurm")
        for path in sorted((REPO / package).rglob("*.py"))
        if path.name != "__init__.py" and "migrations" not in path.parts
    ]
    assert len(modules) > 150
    missing = [str(path.relative_to(REPO)) for path in modules if path.name not in text]
    assert missing == [], f"docs/architecture.md does not name: {', '.join(missing)}"
