"""collbench's exit statuses, as the README's table and the top-level help list them: in the lowest layer, so
that the verdicts (jobs.isolate, jobs.inspect) name the status they ask for; jobs.cli.exit_codes re-exports them."""

EXIT_OK = 0
"""Every check passed."""
EXIT_FAILED = 1
"""A rank failed, the job did not complete, a row is wrong or incomplete, a regression, a bad node or link."""
EXIT_USAGE = 2
"""Bad input: one line naming it; nothing was started."""
EXIT_UNAVAILABLE = 3
"""Slurm is not installed or its controller does not answer."""
EXIT_CANNOT_RUN = 4
"""`check` only: the check itself could not run or settle (srun refused the step, nothing was measured,
nodes were left unchecked with no node to blame): no node is to be drained for it."""
EXIT_INCONCLUSIVE = 5
"""`isolate` and `check`: nothing confirmed bad, but a node, rail or link the evidence could not settle (the verdict's
INCONCLUSIVE lines say which and what would settle it): nothing is drained or excluded for it."""


PRECEDENCE = (EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_FAILED, EXIT_CANNOT_RUN, EXIT_INCONCLUSIVE, EXIT_OK)
"""Which status wins when a command has several (the first here): a confirmed failure beats an inconclusive
verdict, though 5 is the larger number, so statuses are combined by worst_exit, never by max."""


def worst_exit(*codes: int) -> int:
    """The status that wins of `codes` (PRECEDENCE; one not listed, 130 say, wins over all)."""
    return min(codes, key=lambda code: PRECEDENCE.index(code) if code in PRECEDENCE else -1, default=EXIT_OK)
