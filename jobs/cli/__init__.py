"""The `collbench` command line: one module per command family, over the launchers and the readers."""
