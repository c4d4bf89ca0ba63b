"""Collective-communication benchmarks over torch.distributed.

The modules without torch (layout, dtypes, settings, sizes, results, table) can be imported
by the CLI and the report tools without paying for a torch import; the ones that run
collectives (ops, patterns, timing, sweep) import torch.
"""
