"""The oldest torch collbench runs on, checked where a run first imports torch: no torch here."""

from __future__ import annotations

import re

TORCH_FLOOR = (2, 6)
"""group_src, group_dst and group_peer (collectives.ops) and split_group arrived in torch 2.6."""


class TorchTooOld(RuntimeError):
    """The torch this process imported is older than TORCH_FLOOR."""


def torch_floor_problem(version: str) -> str:
    """The one line saying why `version` (torch.__version__) cannot run collbench; '' when it can."""
    found = re.match(r"(\d+)\.(\d+)", version)
    if found and (int(found[1]), int(found[2])) >= TORCH_FLOOR:
        return ""
    floor = ".".join(map(str, TORCH_FLOOR))
    return f"collbench needs torch >= {floor} (group_src/group_dst/group_peer, split_group); this is torch {version}"


def require_torch_floor(version: str) -> None:
    """Raise TorchTooOld when `version` is older than the floor."""
    problem = torch_floor_problem(version)
    if problem:
        raise TorchTooOld(problem)
