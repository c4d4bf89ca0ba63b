"""`collbench isolate`: which node or link slows the cluster. So far the planner (plan, bisect) and the
verdict, as plain data and pure functions; the job that runs the rounds and the command come next."""
