"""`collbench isolate`: which node or which link slows the cluster. Rounds of disjoint node groups measured
at once in one Slurm job; the planner (`plan`, `bisect`, `rounds`) and the verdict (`verdict`, `outcome`)
are plain data and pure functions; `job` runs the rounds on every rank, `command` is the CLI."""
