#!/bin/bash
# Stop what tests/cluster/up.sh started: only the PIDs in its pid files, and processes inside its own
# namespaces; then remove its namespaces, bridge and rails. --purge also deletes its state under $LAB.
set -uo pipefail
LAB=${LAB:-/tmp/collbench-slurm}
stop_pid() { # stop_pid PIDFILE COMM
  local f=$1 comm=$2 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q "$comm" "/proc/$pid/comm" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  rm -f "$f"
}
for f in "$LAB"/run/slurmd-*.pid; do [ -e "$f" ] && stop_pid "$f" slurmd & done; wait
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^cbnode'); do
  pids=$(ip netns pids "$ns" 2>/dev/null)
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
done
stop_pid "$LAB/run/slurmctld.pid" slurmctld   # before slurmdbd, so it can flush job records
stop_pid "$LAB/run/slurmdbd.pid" slurmdbd
stop_pid "$LAB/mysql/mysqld.pid" mariadbd & stop_pid "$LAB/munge/munged.pid" munged & wait
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^cbnode'); do ip netns del "$ns"; done
ip link show cbbr0 >/dev/null 2>&1 && ip link del cbbr0
# the rails (any RAILS): deleting the namespaces took the node ends; left are the leaf bridges cbrRs1/cbrRs2,
# the uplink veth pairs cbuRs1<->cbuRs2 (one end deletes both) and any root end cbrRvI left over
for dev in $(ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}' \
             | grep -E '^(cbu[0-9]+s1|cbr[0-9]+v[0-9]+|cbr[0-9]+s[12])$'); do
  ip link del "$dev" 2>/dev/null
done
if [ "${1:-}" = --purge ]; then
  rm -rf "$LAB"/{state,spool,log,run,munge,mysql,etc}
fi
echo "[cluster down] stopped"
