#!/bin/bash
# collbench's scheduled pass, run inside the allocation a scrontab entry (collbench.scrontab) or a cron'd
# sbatch (collbench.cron) holds:
#   1. collbench check --apply over the allocation's nodes: a node it names is drained with a coded reason
#      (collbench:<code> by check run=<run id> <figure>); a node collbench drained and the check passes is
#      resumed; a node someone else drained is never touched (docs/schedule.md);
#   2. collbench history ingest of the check's run: records it if the check could not (a database down);
#   3. with COLLBENCH_TEXTFILE set, collbench export prometheus of that run into node_exporter's textfile
#      directory, its drains included: what the alert rules (examples/prometheus) read.
# Its arguments go to collbench check (--config NAME, KEY=VALUE ...). Exit status: the check's (0 every node
# vetted, 1 a node cordoned, 4 the check could not run or settle: nothing drained for it).
#
#   COLLBENCH           the command (default: collbench)
#   COLLBENCH_RUNS      where the runs are kept (default: runs, under the entry's --chdir)
#   COLLBENCH_TEXTFILE  a .prom file for node_exporter's textfile collector (default: none)
set -uo pipefail

COLLBENCH=${COLLBENCH:-collbench}
RUNS=${COLLBENCH_RUNS:-runs}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# shellcheck disable=SC2086  # COLLBENCH is a word list on purpose (e.g. "python -m jobs.cli")
$COLLBENCH check --apply "output_dir=$RUNS" "$@" | tee "$out"
status=${PIPESTATUS[0]}

# the history the check's own config names (--config NAME, history.url=URL among the arguments)
history=()
while [ $# -gt 0 ]; do
  case $1 in
    --config) history+=(--config "$2"); shift ;;
    history.url=*) history+=(--db "${1#history.url=}") ;;
  esac
  shift
done
run=$(sed -n 's|^# files: \([^ ,]*\)/check.*|\1|p' "$out" | head -n 1)
if [ -n "$run" ]; then
  # shellcheck disable=SC2086
  $COLLBENCH history ingest "${history[@]}" "$run" >/dev/null || echo "collbench-nightly: history ingest of $run failed" >&2
  if [ -n "${COLLBENCH_TEXTFILE:-}" ]; then
    # shellcheck disable=SC2086
    $COLLBENCH export prometheus "$run" --textfile "$COLLBENCH_TEXTFILE" \
      || echo "collbench-nightly: export of $run failed" >&2
  fi
fi
exit "$status"
