#!/usr/bin/env bash
# How many Slurm commands `collbench wait` and `collbench scale wait` run per minute, on the project's test
# cluster (tests/cluster/up.sh): a PATH shim logs every squeue, sacct, sinfo, scontrol, sbatch, scancel and
# srun call (a timestamp and the arguments) and runs the real one from /usr/bin. Only the waiting command
# runs under the shim; submitting does not count. Not part of the test run; takes about 5 minutes.
#
#   SLURM_CONF=/tmp/collbench-slurm/etc/slurm.conf tests/bench/slurm_calls.sh [SLOW_MS]
#
# SLOW_MS (default 10000): rank 0 reaches each measurement this late (faults.slow_ms), which sets the
# jobs' length: 10000 gives about two minutes.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-$repo/.venv/bin/python}
slow_ms=${1:-10000}
: "${SLURM_CONF:=/tmp/collbench-slurm/etc/slurm.conf}"
export SLURM_CONF
work=$(mktemp -d /tmp/collbench-slurm-calls.XXXXXX)
shim=$work/shim
mkdir -p "$shim"
for cmd in squeue sacct sinfo scontrol sbatch scancel srun; do
  cat >"$shim/$cmd" <<EOF
#!/bin/sh
printf '%s $cmd %s\n' "\$(date +%s.%N)" "\$*" >>"\${SLURM_CALLS_LOG:?}"
exec /usr/bin/$cmd "\$@"
EOF
  chmod +x "$shim/$cmd"
done

collbench() { (cd "$work" && "$python" -m jobs.cli "$@"); }
sweep_args=(bench.ops=[all_reduce,all_gather] bench.max_bytes=4K slurm.tasks_per_node=1
            faults.slow_rank=0 "faults.slow_ms=$slow_ms" "output_dir=$work/runs")

# figures LOG WHAT SECONDS: calls, per minute, and per command
figures() {
  local log=$1 what=$2 seconds=$3
  local calls
  calls=$(wc -l <"$log")
  awk -v calls="$calls" -v s="$seconds" -v what="$what" 'BEGIN {
    printf "%s: %d Slurm calls in %.0f s = %.1f per minute\n", what, calls, s, calls * 60 / s }'
  awk '{ n[$2]++ } END { for (c in n) printf "  %-8s %d\n", c, n[c] }' "$log" | sort
}

# (a) one `collbench wait` of one job
out=$(collbench submit --config testcluster nodes=2 "${sweep_args[@]}")
job=$(sed -n 's/^job \([0-9]*\)$/\1/p' <<<"$out")
export SLURM_CALLS_LOG=$work/wait.log
: >"$SLURM_CALLS_LOG"
start=$(date +%s.%N)
PATH=$shim:$PATH collbench wait "$job" --output-dir "$work/runs" >/dev/null 2>"$work/wait.err" || true
seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
echo "command: collbench wait $job --output-dir $work/runs   (collbench submit --config testcluster nodes=2 ${sweep_args[*]})"
figures "$SLURM_CALLS_LOG" "(a) collbench wait, one job" "$seconds"
tail -n 1 "$work/wait.err"

# (b) one `collbench scale wait` of three runs at once (partition wide: all three run together)
out=$(collbench scale --config testcluster nodes=1..3 slurm.partition=wide "${sweep_args[@]}" --output-dir "$work/runs")
sweep=$(sed -n 's/^sweep \(sweep-[^ ]*\)$/\1/p' <<<"$out")
export SLURM_CALLS_LOG=$work/scale.log
: >"$SLURM_CALLS_LOG"
start=$(date +%s.%N)
PATH=$shim:$PATH collbench scale wait "$sweep" --output-dir "$work/runs" >/dev/null 2>"$work/scale.err" || true
seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
echo "command: collbench scale wait $sweep --output-dir $work/runs   (collbench scale --config testcluster nodes=1..3 slurm.partition=wide ${sweep_args[*]})"
figures "$SLURM_CALLS_LOG" "(b) collbench scale wait, three runs" "$seconds"
echo "logs: $work/wait.log $work/scale.log"
