"""Close the loop: each verdict about a node with its reason code (findings), and what collbench did to
Slurm's nodes after a verdict (node_actions: each drain and resume it ran or Slurm refused, each node it
left and why). A run recorded before has no findings rows: its isolate tables still say what it named.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "findings",
        sa.Column("run", sa.Integer(), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("code", sa.String(length=32), nullable=False),
        sa.Column("figure", sa.Text(), nullable=False),
    )
    op.create_index("ix_findings_run", "findings", ["run"])
    op.create_index("ix_findings_host", "findings", ["host"])
    op.create_table(
        "node_actions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("cluster", sa.String(length=64), nullable=False),
        sa.Column("task", sa.String(length=16), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("codes", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("why", sa.Text(), nullable=False),
        sa.Column("done", sa.Boolean(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
    )
    op.create_index("ix_node_actions_host", "node_actions", ["host"])


def downgrade() -> None:
    op.drop_index("ix_node_actions_host", table_name="node_actions")
    op.drop_table("node_actions")
    op.drop_index("ix_findings_host", table_name="findings")
    op.drop_index("ix_findings_run", table_name="findings")
    op.drop_table("findings")
