"""What a directory holds, file by file: to show that a command read a run and wrote nothing into it."""

from __future__ import annotations

import hashlib
from pathlib import Path


def fingerprint(root: Path) -> dict[str, str]:
    """Every file under root (hidden ones too) -> the sha256 of its content."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }
