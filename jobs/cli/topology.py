"""The switch topology a run of isolate or check is judged with, read once at its start (Slurm's topology
plugin, or the config's topology.switches) and kept in the run's config, so its readers never ask Slurm."""

from __future__ import annotations

from jobs.config.model import Config, derive


def with_topology(cfg: Config) -> tuple[Config, str]:
    """`cfg` with topology.switches and topology.resolved_from filled in, and the line that says so."""
    resolved = cfg.topology.resolved()
    if not resolved.switches:
        line = "# switch topology: none known (topology.source, Slurm's topology plugin); verdicts name nodes, rails"
    else:
        leaves = ", ".join(f"{leaf} = {hosts}" for leaf, hosts in sorted(resolved.switches.items()))
        line = f"# switch topology ({resolved.resolved_from}): {leaves}"
    return derive(cfg, topology=resolved), line
