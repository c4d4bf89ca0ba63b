"""Verdicts at the fabric's own grain (isolate.json format 3): isolate_nodes gains rail (NULL: the node over
all its rails, the only rows before) and nic, so that each (node, rail) is a row of its own, bad for the slow
rails the verdict named; isolate_links gains rail (NULL: node grain); isolate_switches, new, keeps each slow
switch link (or cut) the verdict named, with the hosts behind it.

Rows recorded before are node grain and keep rail NULL: `collbench history prune` and `history ingest` of the
run directories record them again with their rails and switches.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("isolate_nodes") as batch:
        batch.add_column(sa.Column("rail", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("nic", sa.String(length=64), nullable=False, server_default=""))
    with op.batch_alter_table("isolate_links") as batch:
        batch.add_column(sa.Column("rail", sa.Integer(), nullable=True))
    op.create_table(
        "isolate_switches",
        sa.Column("run", sa.Integer(), nullable=False),
        sa.Column("switches", sa.String(length=255), nullable=False),
        sa.Column("switch_a", sa.String(length=255), nullable=False),
        sa.Column("switch_b", sa.String(length=255), nullable=False),
        sa.Column("rail", sa.Integer(), nullable=True),
        sa.Column("side_a", sa.Text(), nullable=False),
        sa.Column("side_b", sa.Text(), nullable=False),
        sa.Column("measurements", sa.Integer(), nullable=False),
        sa.Column("slow", sa.Integer(), nullable=False),
        sa.Column("busbw", sa.Float(), nullable=False),
        sa.Column("ratio", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run"],
            ["runs.id"],
        ),
    )
    op.create_index("ix_isolate_switches_a", "isolate_switches", ["switch_a"], unique=False)
    op.create_index("ix_isolate_switches_b", "isolate_switches", ["switch_b"], unique=False)
    op.create_index("ix_isolate_switches_run", "isolate_switches", ["run"], unique=False)


def downgrade() -> None:
    """Back to node grain: the (node, rail) rows and the switches go, the slow links stay without their rail (a
    downgraded history holds what 0002's collbench recorded of the same verdicts)."""
    op.drop_index("ix_isolate_switches_run", table_name="isolate_switches")
    op.drop_index("ix_isolate_switches_b", table_name="isolate_switches")
    op.drop_index("ix_isolate_switches_a", table_name="isolate_switches")
    op.drop_table("isolate_switches")
    with op.batch_alter_table("isolate_links") as batch:
        batch.drop_column("rail")
    op.execute(sa.text("DELETE FROM isolate_nodes WHERE rail IS NOT NULL"))
    with op.batch_alter_table("isolate_nodes") as batch:
        batch.drop_column("nic")
        batch.drop_column("rail")
