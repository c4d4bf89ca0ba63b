"""Per-rank logs: one file per rank in the run directory, every record tagged rank/local/host."""

from __future__ import annotations

import sys
from pathlib import Path

from loguru import logger

LOG_FORMAT = (
    "{time:YYYY-MM-DDTHH:mm:ss.SSSSSSZZ} | {level: <7} | "
    "rank={extra[rank]} local={extra[local_rank]} host={extra[host]} | {message}"
)
"""Every line starts with an ISO timestamp, so logs of all ranks merge in time order."""


def setup_rank_logging(log_file: Path, rank: int, local_rank: int, host: str) -> None:
    """Send this process's loguru records to its rank file (DEBUG up) and, on rank 0, its warnings and errors
    to stderr too: the stderr of a rank started by torchrun, srun or mpirun is the user's terminal, where a line
    per measurement would bury the table (they stay in the file)."""
    logger.remove()
    logger.configure(extra={"rank": rank, "local_rank": local_rank, "host": host})
    logger.add(log_file, format=LOG_FORMAT, level="DEBUG", enqueue=False, backtrace=False, diagnose=False)
    if rank == 0:
        logger.add(sys.stderr, format=LOG_FORMAT, level="WARNING", backtrace=False, diagnose=False)
