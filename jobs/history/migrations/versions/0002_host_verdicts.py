"""A host's record keeps the run's verdict on it, not the raw order of its timers: blamed_ranks (its ranks
the verdict names as the cause of a failure: an error of their own, a death, a lost node, a hang; not the
ranks srun's clean-up stopped nor those that noticed a lost peer) and slow (the report's line when it
named the host slow at its own work, else ''); slowest_rows (rows whose slowest timer was on the host,
which the report holds is no evidence against it) goes.

Rows recorded before keep blamed_ranks 0 and slow '': `collbench history prune` and `history ingest` of
the run directories record them again with the verdicts.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("hosts") as batch:
        batch.add_column(sa.Column("blamed_ranks", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("slow", sa.Text(), nullable=False, server_default=""))
        batch.drop_column("slowest_rows")


def downgrade() -> None:
    with op.batch_alter_table("hosts") as batch:
        batch.add_column(sa.Column("slowest_rows", sa.Integer(), nullable=False, server_default="0"))
        batch.drop_column("slow")
        batch.drop_column("blamed_ranks")
