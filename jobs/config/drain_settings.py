"""The config's `drain` section: whether a verdict drains and resumes nodes itself (docs/check.md,
"Drain and resume")."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(kw_only=True, slots=True)
class DrainSettings:
    apply: bool = False
    """Run the scontrol lines a verdict makes (check, isolate, check --node): drain each node it named with a
    reason code under the `collbench:` mark, and resume each node collbench itself drained that a pass at
    least as wide clears. A node drained by anybody else is never touched. False: `--drain` prints the lines
    and nothing runs (the same as --apply)."""
    resume: bool = True
    """Resume the nodes collbench drained once a later pass clears them (false: drain only)."""
    reservation_minutes: int = 30
    """collbench recheck: the longest the maintenance reservation that holds the drained nodes and their
    partner while they are checked again may last (it is released as soon as the check ends)."""

    def problems(self) -> list[str]:
        if self.reservation_minutes < 1:
            return [f"drain.reservation_minutes: {self.reservation_minutes} must be 1 or more"]
        return []
