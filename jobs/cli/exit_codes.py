"""collbench's exit statuses, re-exported for the commands: they live in jobs.config.exit_codes, the lowest
layer, so that the verdicts (jobs.isolate, jobs.inspect) can name the status they ask for."""

from jobs.config.exit_codes import (
    EXIT_CANNOT_RUN,
    EXIT_FAILED,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    worst_exit,
)

__all__ = [
    "EXIT_CANNOT_RUN",
    "EXIT_FAILED",
    "EXIT_INCONCLUSIVE",
    "EXIT_OK",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "worst_exit",
]
