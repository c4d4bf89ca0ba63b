"""The results history: every run recorded in a database (SQLite by default, PostgreSQL for a team),
read from the run directory's records, never writing into it. Above jobs.inspect (whose readers it uses),
beside jobs.runtime, below jobs.launchers (a run is recorded by whoever writes its final files)."""
