"""A verdict about one node, as the run directory's records carry it: the node (or link), its reason code and
the figure behind it. The codes and what each means: jobs.isolate.reasons (docs/check.md lists them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Code = Literal[
    "slow_node", "slow_rail", "slow_link", "node_stopped", "setup_failed", "fabric_failed", "wrong_result", "not_run"
]


@dataclass(frozen=True, slots=True)
class Finding:
    """A verdict about one node (or a link, named 'a-b', or a switch link): its code and the figure behind it."""

    host: str
    code: Code
    figure: str
