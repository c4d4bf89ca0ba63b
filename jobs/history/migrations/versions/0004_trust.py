"""A history to trust: each run says why it is left out of every baseline (runs.excluded, '' for a healthy run:
a fault injected, a verdict that named a problem, a failure), carries the digest of its results (runs.digest,
so the same results recorded twice are one row), and each host row carries its wrong elements (wrong, and the
ranks that had them) and the cause of a failure in words (cause).

Rows recorded before are given what their own rows tell: a failed run, a host named slow, wrong elements, a
fabric finding or a bad isolate node leave a run out of the baselines from now on. An injected fault cannot be
told from the rows: `collbench history ingest` of the run directories records them again with it.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

BACKFILL = (
    ("the run failed", "runs.outcome = 'failed'"),
    ("its verdict named a slow host", "EXISTS (SELECT 1 FROM hosts h WHERE h.run = runs.id AND h.slow <> '')"),
    ("wrong elements", "EXISTS (SELECT 1 FROM results r WHERE r.run = runs.id AND r.wrong > 0)"),
    ("a fabric finding", "EXISTS (SELECT 1 FROM fabric f WHERE f.run = runs.id)"),
    ("its verdict named a bad node", "EXISTS (SELECT 1 FROM isolate_nodes i WHERE i.run = runs.id AND i.bad)"),
)
"""(reason, the condition on a recorded run's own rows): the first that holds is its reason."""


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("excluded", sa.Text(), nullable=False, server_default=""))
        batch.add_column(sa.Column("digest", sa.String(length=64), nullable=False, server_default=""))
    op.create_index("ix_runs_digest", "runs", ["digest"], unique=False)
    with op.batch_alter_table("hosts") as batch:
        batch.add_column(sa.Column("wrong", sa.BigInteger(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("wrong_ranks", sa.Text(), nullable=False, server_default=""))
        batch.add_column(sa.Column("cause", sa.Text(), nullable=False, server_default=""))
    for reason, condition in BACKFILL:
        op.execute(
            sa.text(f"UPDATE runs SET excluded = :reason WHERE excluded = '' AND {condition}").bindparams(
                reason=f"{reason} (recorded before 0004)"
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("hosts") as batch:
        batch.drop_column("cause")
        batch.drop_column("wrong_ranks")
        batch.drop_column("wrong")
    op.drop_index("ix_runs_digest", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("digest")
        batch.drop_column("excluded")
