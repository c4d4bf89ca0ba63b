"""The history's tables, as SQLAlchemy Core sees them (the migrations in migrations/versions build them;
tests/jobs/history/test_schema.py checks that the two agree)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

HOST = String(255)
WORD = String(64)


def _run_ref() -> Column[int]:
    return Column("run", Integer, ForeignKey("runs.id"), nullable=False)


sweeps = Table(
    "sweeps",
    metadata,
    Column("sweep_id", WORD, primary_key=True),
    Column("created", Float, nullable=False),
    Column("config", Text, nullable=False),
    Column("node_counts", Text, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", WORD, nullable=False, unique=True),
    Column("sweep_id", WORD, ForeignKey("sweeps.sweep_id"), nullable=True),
    Column("job_id", WORD, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("task", String(16), nullable=False),
    Column("launcher", String(16), nullable=False),
    Column("started", Float, nullable=False),
    Column("ended", Float, nullable=False),
    Column("user", WORD, nullable=False),
    Column("cluster", WORD, nullable=False),
    Column("config", String(16), nullable=False),
    Column("nodes", Integer, nullable=False),
    Column("hostlist", Text, nullable=False),
    Column("world_size", Integer, nullable=False),
    Column("backend", String(16), nullable=False),
    Column("device", String(16), nullable=False),
    Column("collbench_version", WORD, nullable=False),
    Column("torch_version", WORD, nullable=False),
    Column("nccl_version", WORD, nullable=False),
    Column("cuda_version", WORD, nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("recorded", Float, nullable=False),
    Column("excluded", Text, nullable=False, server_default=""),
    Column("digest", String(64), nullable=False, server_default=""),
    Index("ix_runs_started", "started"),
    Index("ix_runs_filters", "cluster", "config", "nodes", "started"),
    Index("ix_runs_outcome", "outcome", "started"),
    Index("ix_runs_sweep", "sweep_id"),
    Index("ix_runs_digest", "digest"),
)
"""excluded: why the run is left out of every baseline, '' for a healthy run (jobs.history.health); digest: the
sha256 of what it measured (its hosts, start and results), so the same results recorded twice are one row."""

problems = Table(
    "problems",
    metadata,
    _run_ref(),
    Column("seq", Integer, nullable=False),
    Column("line", Text, nullable=False),
    Index("ix_problems_run", "run"),
)

results = Table(
    "results",
    metadata,
    _run_ref(),
    Column("op", String(32), nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("requested_size", BigInteger, nullable=False),
    Column("count", BigInteger, nullable=False),
    Column("dtype", String(16), nullable=False),
    Column("redop", String(16), nullable=False),
    Column("root", Integer, nullable=False),
    Column("in_place", Boolean, nullable=False),
    Column("nranks", Integer, nullable=False),
    Column("time_us", Float, nullable=False),
    Column("algbw", Float, nullable=False),
    Column("busbw", Float, nullable=False),
    Column("wrong", BigInteger, nullable=False),
    Column("slowest_rank", Integer, nullable=False),
    Column("slowest_host", HOST, nullable=False),
    Column("group", Text, nullable=False),
    Index("ix_results_run", "run"),
    Index("ix_results_trend", "op", "requested_size", "run"),
)

hosts = Table(
    "hosts",
    metadata,
    _run_ref(),
    Column("host", HOST, nullable=False),
    Column("ranks", Integer, nullable=False),
    Column("failed_ranks", Integer, nullable=False),
    Column("blamed_ranks", Integer, nullable=False, server_default="0"),
    Column("slow", Text, nullable=False, server_default=""),
    Column("wrong", BigInteger, nullable=False, server_default="0"),
    Column("wrong_ranks", Text, nullable=False, server_default=""),
    Column("cause", Text, nullable=False, server_default=""),
    Index("ix_hosts_run", "run"),
    Index("ix_hosts_host", "host"),
)
"""One row per host of a run: its ranks, those that failed (facts) and the run's verdict on it: blamed_ranks and
cause (the cause of a failure in words), slow (the report's line), wrong (wrong elements over its ranks) and
wrong_ranks ('1,3')."""

fabric = Table(
    "fabric",
    metadata,
    _run_ref(),
    Column("kind", String(16), nullable=False),
    Column("host", HOST, nullable=False),
    Column("line", Text, nullable=False),
    Index("ix_fabric_run", "run"),
    Index("ix_fabric_host", "host"),
)

isolate_nodes = Table(
    "isolate_nodes",
    metadata,
    _run_ref(),
    Column("host", HOST, nullable=False),
    Column("measurements", Integer, nullable=False),
    Column("slow", Integer, nullable=False),
    Column("median_busbw", Float, nullable=False),
    Column("ratio", Float, nullable=False),
    Column("bad", Boolean, nullable=False),
    Column("rail", Integer, nullable=True),
    Column("nic", WORD, nullable=False, server_default=""),
    Index("ix_isolate_nodes_run", "run"),
    Index("ix_isolate_nodes_host", "host"),
)
"""One row per node over all its rails (rail NULL), and, for a rail-aligned verdict, one per (node, rail) with
its NIC (rails.hcas or rails.interfaces, '' when the config names none): bad for the slow rails the verdict
named (a node bad over most of its rails is bad on its NULL row)."""

isolate_links = Table(
    "isolate_links",
    metadata,
    _run_ref(),
    Column("host_a", HOST, nullable=False),
    Column("host_b", HOST, nullable=False),
    Column("busbw", Float, nullable=False),
    Column("ratio", Float, nullable=False),
    Column("rail", Integer, nullable=True),
    Index("ix_isolate_links_run", "run"),
    Index("ix_isolate_links_a", "host_a"),
    Index("ix_isolate_links_b", "host_b"),
)
"""A slow pair of healthy nodes; rail NULL: node grain (every rank of the two)."""

isolate_switches = Table(
    "isolate_switches",
    metadata,
    _run_ref(),
    Column("switches", HOST, nullable=False),
    Column("switch_a", HOST, nullable=False),
    Column("switch_b", HOST, nullable=False),
    Column("rail", Integer, nullable=True),
    Column("side_a", Text, nullable=False),
    Column("side_b", Text, nullable=False),
    Column("measurements", Integer, nullable=False),
    Column("slow", Integer, nullable=False),
    Column("busbw", Float, nullable=False),
    Column("ratio", Float, nullable=False),
    Index("ix_isolate_switches_run", "run"),
    Index("ix_isolate_switches_a", "switch_a"),
    Index("ix_isolate_switches_b", "switch_b"),
)
"""A slow switch link the verdict named: switches 's1-s2' (the link between leaves s1 and s2), 's1 uplink', or
'' (no topology: a cut the matrix shows), its switches one a column (switch_a, switch_b: '' where none, so a
name with a '-' in it is found whole); rail NULL: every rail; side_a, side_b: the hostlists behind it (none
of them drained for it)."""

attempts = Table(
    "attempts",
    metadata,
    _run_ref(),
    Column("number", Integer, nullable=False),
    Column("nodes", Text, nullable=False),
    Column("started", Float, nullable=False),
    Column("previous_ended", WORD, nullable=False),
    Index("ix_attempts_run", "run"),
)

findings = Table(
    "findings",
    metadata,
    _run_ref(),
    Column("host", HOST, nullable=False),
    Column("code", String(32), nullable=False),
    Column("figure", Text, nullable=False),
    Index("ix_findings_run", "run"),
    Index("ix_findings_host", "host"),
)
"""Each verdict about a node (or a link 'a-b', or a switch link) with its reason code (jobs.isolate.reasons)."""

node_actions = Table(
    "node_actions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", WORD, nullable=False),
    Column("cluster", WORD, nullable=False),
    Column("task", String(16), nullable=False),
    Column("host", HOST, nullable=False),
    Column("action", String(16), nullable=False),
    Column("codes", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("why", Text, nullable=False),
    Column("done", Boolean, nullable=False),
    Column("error", Text, nullable=False),
    Column("at", Float, nullable=False),
    Index("ix_node_actions_host", "host"),
)
"""What collbench did to a Slurm node after a verdict: drain, resume (done, or refused with Slurm's words in
error), or leave (someone else's drain, a reason still open). Keyed by run id, not by the runs row: the run
may be recorded later, or never."""

CHILDREN = (problems, results, hosts, fabric, isolate_nodes, isolate_links, isolate_switches, attempts, findings)
"""Every table that hangs off a run: what replacing a run's record deletes first."""
