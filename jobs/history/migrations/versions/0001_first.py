"""The first schema: runs, their rows, hosts, fabric findings, isolate verdicts, attempts and sweeps.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "sweeps",
        sa.Column("sweep_id", sa.String(length=64), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        sa.Column("config", sa.Text(), nullable=False),
        sa.Column("node_counts", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("sweep_id"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=64), nullable=False),
        sa.Column("sweep_id", sa.String(length=64), nullable=True),
        sa.Column("job_id", sa.String(length=64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("task", sa.String(length=16), nullable=False),
        sa.Column("launcher", sa.String(length=16), nullable=False),
        sa.Column("started", sa.Float(), nullable=False),
        sa.Column("ended", sa.Float(), nullable=False),
        sa.Column("user", sa.String(length=64), nullable=False),
        sa.Column("cluster", sa.String(length=64), nullable=False),
        sa.Column("config", sa.String(length=16), nullable=False),
        sa.Column("nodes", sa.Integer(), nullable=False),
        sa.Column("hostlist", sa.Text(), nullable=False),
        sa.Column("world_size", sa.Integer(), nullable=False),
        sa.Column("backend", sa.String(length=16), nullable=False),
        sa.Column("device", sa.String(length=16), nullable=False),
        sa.Column("collbench_version", sa.String(length=64), nullable=False),
        sa.Column("torch_version", sa.String(length=64), nullable=False),
        sa.Column("nccl_version", sa.String(length=64), nullable=False),
        sa.Column("cuda_version", sa.String(length=64), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("recorded", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["sweep_id"],
            ["sweeps.sweep_id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id"),
    )
    op.create_index("ix_runs_filters", "runs", ["cluster", "config", "nodes", "started"], unique=False)
    op.create_index("ix_runs_outcome", "runs", ["outcome", "started"], unique=False)
    op.create_index("ix_runs_started", "runs", ["started"], unique=False)
    op.create_index("ix_runs_sweep", "runs", ["sweep_id"], unique=False)
    op.create_table(
        "attempts",
        sa.Column("run", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("nodes", sa.Text(), nullable=False),
        sa.Column("started", sa.Float(), nullable=False),
        sa.Column("previous_ended", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["run"],
            ["runs.id"],
        ),
    )
    op.create_index("ix_attempts_run", "attempts", ["run"], unique=False)
    op.create_table(
        "fabric",
        sa.Column("run", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("line", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run"],
            ["runs.id"],
        ),
    )
    op.create_index("ix_fabric_host", "fabric", ["host"], unique=False)
    op.create_index("ix_fabric_run", "fabric", ["run"], unique=False)
    op.create_table(
        "hosts",
        sa.Column("run", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("ranks", sa.Integer(), nullable=False),
        sa.Column("failed_ranks", sa.Integer(), nullable=False),
        sa.Column("slowest_rows", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run"],
            ["runs.id"],
        ),
    )
    op.create_index("ix_hosts_host", "hosts", ["host"], unique=False)
    op.create_index("ix_hosts_run", "hosts", ["run"], unique=False)
    op.create_table(
        "isolate_links",
        sa.Column("run", sa.Integer(), nullable=False),
        sa.Column("host_a", sa.String(length=255), nullable=False),
        sa.Column("host_b", sa.String(length=255), nullable=False),
        sa.Column("busbw", sa.Float(), nullable=False),
        sa.Column("ratio", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run"],
            ["runs.id"],
        ),
    )
    op.create_index("ix_isolate_links_a", "isolate_links", ["host_a"], unique=False)
    op.create_index("ix_isolate_links_b", "isolate_links", ["host_b"], unique=False)
    op.create_index("ix_isolate_links_run", "isolate_links", ["run"], unique=False)
    op.create_table(
        "isolate_nodes",
        sa.Column("run", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("measurements", sa.Integer(), nullable=False),
        sa.Column("slow", sa.Integer(), nullable=False),
        sa.Column("median_busbw", sa.Float(), nullable=False),
        sa.Column("ratio", sa.Float(), nullable=False),
        sa.Column("bad", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run"],
            ["runs.id"],
        ),
    )
    op.create_index("ix_isolate_nodes_host", "isolate_nodes", ["host"], unique=False)
    op.create_index("ix_isolate_nodes_run", "isolate_nodes", ["run"], unique=False)
    op.create_table(
        "problems",
        sa.Column("run", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("line", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run"],
            ["runs.id"],
        ),
    )
    op.create_index("ix_problems_run", "problems", ["run"], unique=False)
    op.create_table(
        "results",
        sa.Column("run", sa.Integer(), nullable=False),
        sa.Column("op", sa.String(length=32), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("requested_size", sa.BigInteger(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("dtype", sa.String(length=16), nullable=False),
        sa.Column("redop", sa.String(length=16), nullable=False),
        sa.Column("root", sa.Integer(), nullable=False),
        sa.Column("in_place", sa.Boolean(), nullable=False),
        sa.Column("nranks", sa.Integer(), nullable=False),
        sa.Column("time_us", sa.Float(), nullable=False),
        sa.Column("algbw", sa.Float(), nullable=False),
        sa.Column("busbw", sa.Float(), nullable=False),
        sa.Column("wrong", sa.BigInteger(), nullable=False),
        sa.Column("slowest_rank", sa.Integer(), nullable=False),
        sa.Column("slowest_host", sa.String(length=255), nullable=False),
        sa.Column("group", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run"],
            ["runs.id"],
        ),
    )
    op.create_index("ix_results_run", "results", ["run"], unique=False)
    op.create_index("ix_results_trend", "results", ["op", "requested_size", "run"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_results_trend", table_name="results")
    op.drop_index("ix_results_run", table_name="results")
    op.drop_table("results")
    op.drop_index("ix_problems_run", table_name="problems")
    op.drop_table("problems")
    op.drop_index("ix_isolate_nodes_run", table_name="isolate_nodes")
    op.drop_index("ix_isolate_nodes_host", table_name="isolate_nodes")
    op.drop_table("isolate_nodes")
    op.drop_index("ix_isolate_links_run", table_name="isolate_links")
    op.drop_index("ix_isolate_links_b", table_name="isolate_links")
    op.drop_index("ix_isolate_links_a", table_name="isolate_links")
    op.drop_table("isolate_links")
    op.drop_index("ix_hosts_run", table_name="hosts")
    op.drop_index("ix_hosts_host", table_name="hosts")
    op.drop_table("hosts")
    op.drop_index("ix_fabric_run", table_name="fabric")
    op.drop_index("ix_fabric_host", table_name="fabric")
    op.drop_table("fabric")
    op.drop_index("ix_attempts_run", table_name="attempts")
    op.drop_table("attempts")
    op.drop_index("ix_runs_sweep", table_name="runs")
    op.drop_index("ix_runs_started", table_name="runs")
    op.drop_index("ix_runs_outcome", table_name="runs")
    op.drop_index("ix_runs_filters", table_name="runs")
    op.drop_table("runs")
    op.drop_table("sweeps")
