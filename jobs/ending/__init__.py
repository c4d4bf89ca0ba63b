"""The one home of a run's end: every write of a run's final files, once, and what follows them.

- summary.py: summary.json, nccl-tests/<op>.json and table.txt (record_summary), exactly once; what rank 0
  calls at the end of the job.
- isolate_files.py, check_files.py: an isolate run's verdict files, and a check run's vetted/cordoned/...
  files.
- final_files.py: all of the above for one run, or a wait for rank 0's, from one read of the run.
- exports.py: the config's `exports` section (Prometheus textfile, Pushgateway).
- finish.py: finish_run, the sequence a launcher's wait runs where it sees a run end: final files, the
  history record (injected: this package sits below jobs.history and loads no database driver), exports.

The readers (jobs.inspect) assess and render; they import nothing from here.
"""
