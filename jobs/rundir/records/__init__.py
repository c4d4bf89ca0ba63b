"""The run directory's records: every file collbench writes and reads back, as versioned dataclasses.

Each module holds the records of one concern and their Format (file name, version, upgrades); the
codec reads and writes them all. Import the modules themselves: this package imports nothing, so that
jobs.rundir.layout can use the run record without a cycle.
"""
