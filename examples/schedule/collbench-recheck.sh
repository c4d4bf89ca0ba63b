#!/bin/bash
# Re-check the nodes collbench drained and hand back those that pass (collbench recheck ALL): each is held in
# a maintenance reservation with idle partners, resumed into it, checked with check --apply, and released or
# drained again. Run from a scrontab entry (collbench.scrontab) or cron on a login node; it needs a Slurm
# operator's rights (a reservation, a resume). Its arguments go to collbench recheck (--config NAME, ...).
#
#   COLLBENCH  the command (default: collbench)
set -uo pipefail

COLLBENCH=${COLLBENCH:-collbench}
# shellcheck disable=SC2086  # COLLBENCH is a word list on purpose
exec $COLLBENCH recheck ALL "$@"
