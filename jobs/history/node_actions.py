"""What collbench did to Slurm's nodes after a verdict (jobs.cli.drains), in the history's node_actions table:
written when it happens, read by `history node`. A history that cannot be reached costs one line: the drain
stands, and drains.json in the run directory keeps what was done."""

from __future__ import annotations

import sys
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.exc import SQLAlchemyError

from jobs.config.model import Config
from jobs.history import schema
from jobs.history.database import History, HistoryError, first_line, open_history, resolve_history_url
from jobs.rundir.records.drains import DrainRecord


def action_rows(cluster: str, record: DrainRecord) -> list[dict[str, object]]:
    head = {"run_id": record.run_id, "cluster": cluster, "task": record.task, "at": record.at}
    return [
        {**head, "host": step.host, "action": step.action, "codes": ",".join(step.codes), "reason": step.reason,
         "why": step.why, "done": step.done, "error": step.error}
        for step in record.steps
    ]  # fmt: skip


def record_actions(cfg: Config, cluster: str, record: DrainRecord) -> bool:
    """Write the steps into the history `cfg` names; True if written, one stderr line if it cannot be."""
    try:
        with open_history(resolve_history_url(None, cfg), create_dir=cfg.history.create_dir) as history:
            with history.engine.begin() as connection:
                connection.execute(insert(schema.node_actions), action_rows(cluster, record))
            return True
    except (HistoryError, SQLAlchemyError) as error:
        print(
            f"collbench: history: the drains of {record.run_id} not recorded ({first_line(error)}); "
            "drains.json in its run directory holds them",
            file=sys.stderr,
            flush=True,
        )
    return False


def actions_of(history: History, host: str) -> list[dict[str, Any]]:
    """Every step collbench took (or left) on `host`, oldest first."""
    t = schema.node_actions.c
    query = select(t.run_id, t.task, t.action, t.codes, t.reason, t.why, t.done, t.error, t.at).where(t.host == host)
    with history.engine.connect() as connection:
        return [dict(row) for row in connection.execute(query.order_by(t.at, t.id)).mappings()]
