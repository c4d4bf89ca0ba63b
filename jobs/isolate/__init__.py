"""`collbench isolate`: which node or link slows the cluster. So far the planner (plan, bisect) and the
verdict, as plain data and pure functions, and (in collectives/) an op's sweep over a subgroup; the job
that runs the rounds and the command come next."""
