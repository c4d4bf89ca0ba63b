"""nccl-tests' output read for `collbench import`: its text tables (2.10 on) and its JSON files
(JSON_FILE_VERSION 1 to 3). Readers of files outside any run directory; they write nothing
(jobs/launchers/imported.py writes the run directory). docs/exports.md says what is read and what is skipped."""
