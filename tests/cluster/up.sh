#!/bin/bash
# Stand up collbench's test Slurm cluster on this one machine (Debian 12, root):
#   controller: munged, mariadbd + slurmdbd, slurmctld in the root network namespace, on bridge cbbr0 (10.78.0.1)
#   nodes n1..nN (N=NNODES, default 6): one slurmd each in its own network namespace (cbnodeI, eth0 = 10.78.0.1I), with its own
#   hostname (UTS namespace) and its own /etc/hosts (bind-mounted in a private mount namespace).
# Everything lives under $LAB; nothing under /etc is changed (apt aside). Idempotent: what is up stays up.
#
# Rail-optimized fabric beside eth0 (which still carries Slurm and the existing tests' data), RAILS rails
# (default 2): on rail r each node has an interface rail$r = 10.79.r.1I/24 (veth; root end cbr${r}vI). Each
# rail has two leaf switches, bridges cbr${r}s1 (nodes 1..ceil(N/2)) and cbr${r}s2 (the rest), no address,
# joined by one uplink veth pair cbu${r}s1 <-> cbu${r}s2: s1<->s2 traffic crosses it, traffic within a leaf
# does not. No routing anywhere. Slurm knows it: TopologyPlugin=topology/tree, topology.conf = s1, s2, spine.
# tests/cluster/fabric.py slows a rail, an uplink or a node with tc for a test.
#
# Partitions: debug = n[1-3] (the default, what most tests count on), wide = n[1-N] (collbench isolate).
# usage: [LAB=/tmp/collbench-slurm] [NNODES=6] [RAILS=2] [INSTALL=1] tests/cluster/up.sh
# then:  export SLURM_CONF=$LAB/etc/slurm.conf   (every client command needs it)
# Adapted from the worked recipe in shared/slurm-lab (RECIPE.md): same layout, own names, ports and subnet.
set -euo pipefail
LAB=${LAB:-/tmp/collbench-slurm}
NNODES=${NNODES:-6}
[ "$NNODES" -ge 3 ] || { echo "NNODES=$NNODES: the test cluster needs at least 3 nodes" >&2; exit 2; }
RAILS=${RAILS:-2}
[ "$RAILS" -ge 1 ] || { echo "RAILS=$RAILS: the test cluster needs at least 1 rail" >&2; exit 2; }
INSTALL=${INSTALL:-1}
BR=cbbr0
NET=10.78.0
CTLIP=$NET.1
CTLD_PORT=6917 SLURMD_PORT=6918 DBD_PORT=6919 DB_PORT=3317
export SLURM_CONF=$LAB/etc/slurm.conf
MUNGESOCK=$LAB/munge/munge.socket.2
T0=$(date +%s.%N)
say() { awk -v t0="$T0" -v t1="$(date +%s.%N)" -v m="$*" 'BEGIN{printf "[cluster up %6.2fs] %s\n", t1-t0, m}'; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
waitfor() { # waitfor SECONDS CMD...
  local n=$(( $1 * 10 )); shift
  for _ in $(seq 1 "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "timed out waiting for: $*" >&2; return 1; }
mkdir -p "$LAB"

# ---- 1. Debian packages (Slurm 22.05, munge, slurmdbd + the MariaDB server core)
APT_LOCK=/var/lock/collbench-apt.lock  # tests/debian.py APT_LOCK: the suite's other stream may be installing too
PKGS="slurmctld slurmd slurm-client munge slurmdbd mariadb-server-core mariadb-client-core iproute2 util-linux iputils-ping"
missing=$(for p in $PKGS; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' || echo "$p"; done | xargs)
if [ -n "$missing" ]; then
  [ "$INSTALL" = 1 ] || { echo "missing Debian packages: $missing" >&2; exit 1; }
  say "apt-get install $missing"
  export DEBIAN_FRONTEND=noninteractive
  if ! flock "$APT_LOCK" apt-get install -y -q $missing > "$LAB/apt.log" 2>&1; then
    flock "$APT_LOCK" apt-get update -q >> "$LAB/apt.log" 2>&1
    flock "$APT_LOCK" apt-get install -y -q $missing >> "$LAB/apt.log" 2>&1 || { tail -20 "$LAB/apt.log" >&2; exit 1; }
  fi
fi
say "packages ok ($(slurmd -V))"
if ! command -v scrontab >/dev/null; then  # Debian's slurm-client leaves it out: built from Debian's source
  [ "$INSTALL" = 1 ] || { echo "scrontab missing (tests/cluster/build_scrontab.sh builds it)" >&2; exit 1; }
  "$(dirname "$0")/build_scrontab.sh" > "$LAB/scrontab.log" 2>&1 || { tail -20 "$LAB/scrontab.log" >&2; exit 1; }
  say "$(tail -1 "$LAB/scrontab.log")"
fi

# ---- 2. directories, munge (one munged serves every node: a path socket crosses network namespaces)
mkdir -p "$LAB"/{etc,state,spool,log,run,munge}
chmod 755 "$LAB/munge"
for i in $(seq 1 "$NNODES"); do mkdir -p "$LAB/spool/slurmd-n$i"; done
[ -f "$LAB/munge/munge.key" ] || mungekey -c -k "$LAB/munge/munge.key" -b 1024
chmod 600 "$LAB/munge/munge.key"
alive "$LAB/munge/munged.pid" || munged --num-threads=10 -S "$MUNGESOCK" --key-file="$LAB/munge/munge.key" \
  --log-file="$LAB/munge/munged.log" --pid-file="$LAB/munge/munged.pid" --seed-file="$LAB/munge/munged.seed"
munge -S "$MUNGESOCK" -n | unmunge -S "$MUNGESOCK" >/dev/null
say "munged up"

# ---- 3. network: a bridge for the controller, one namespace + veth per node, no default route anywhere
if ! ip link show "$BR" >/dev/null 2>&1; then
  ip link add "$BR" type bridge
  ip addr add "$CTLIP/24" dev "$BR"
  ip link set "$BR" up
fi
for i in $(seq 1 "$NNODES"); do
  ns=cbnode$i
  [ -e "/run/netns/$ns" ] && continue
  ip netns add "$ns"
  ip link add "cbv$i" type veth peer name eth0 netns "$ns"
  ip link set "cbv$i" master "$BR" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$NET.1$i/24" dev eth0
  ip -n "$ns" link set eth0 up
done
say "namespaces up"

# ---- 3b. rails: per rail two leaf bridges joined by one uplink veth pair; each node's rail$r on its leaf.
# No STP and forward_delay 0 (ports forward at once), no bridge netfilter on these bridges, no addresses
# (IPv6 link-local off too) on anything in the root namespace: the leaves are pure layer-2 switches.
HALF=$(( (NNODES + 1) / 2 ))
leaf() { if [ "$1" -le "$HALF" ]; then echo s1; else echo s2; fi; }
for r in $(seq 0 $(( RAILS - 1 ))); do
  for s in s1 s2; do
    ip link show "cbr$r$s" >/dev/null 2>&1 || ip link add "cbr$r$s" type bridge stp_state 0 forward_delay 0
    ip link set "cbr$r$s" addrgenmode none
    ip link set "cbr$r$s" type bridge stp_state 0 forward_delay 0 \
      nf_call_iptables 0 nf_call_ip6tables 0 nf_call_arptables 0
    ip link set "cbr$r$s" up
  done
  ip link show "cbu${r}s1" >/dev/null 2>&1 || ip link add "cbu${r}s1" type veth peer name "cbu${r}s2"
  for s in s1 s2; do
    ip link set "cbu$r$s" addrgenmode none
    ip link set "cbu$r$s" master "cbr$r$s" up
  done
  for i in $(seq 1 "$NNODES"); do
    ns=cbnode$i
    ip -n "$ns" link show "rail$r" >/dev/null 2>&1 || ip link add "cbr${r}v$i" type veth peer name "rail$r" netns "$ns"
    ip link set "cbr${r}v$i" addrgenmode none
    ip link set "cbr${r}v$i" master "cbr$r$(leaf "$i")" up
    ip -n "$ns" addr replace "10.79.$r.1$i/24" dev "rail$r"
    ip -n "$ns" link set "rail$r" up
  done
done
# frames flow at once: every port forwarding, and n1 reaches the last node (across the uplink) on every rail
notfwd=$(bridge -o link show | grep -E ' master cbr[0-9]+s[12] ' | grep -v 'state forwarding' || true)
[ -z "$notfwd" ] || { echo "rail bridge ports not forwarding: $notfwd" >&2; exit 1; }
for r in $(seq 0 $(( RAILS - 1 ))); do
  ip netns exec cbnode1 ping -q -c1 -W2 "10.79.$r.1$NNODES" >/dev/null \
    || { echo "rail $r: n1 cannot reach n$NNODES (10.79.$r.1$NNODES)" >&2; exit 1; }
done
say "rails up: $RAILS rails, leaves s1 = n[1-$HALF], s2 = n[$(( HALF + 1 ))-$NNODES]"

# ---- 4. configuration
CTLHOST=$(hostname -s)
{
cat <<CONF
ClusterName=collbench
SlurmctldHost=${CTLHOST}(${CTLIP})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGESOCK
CredType=cred/munge
StateSaveLocation=$LAB/state
SlurmdSpoolDir=$LAB/spool/slurmd-%n
SlurmctldPidFile=$LAB/run/slurmctld.pid
SlurmdPidFile=$LAB/run/slurmd-%n.pid
SlurmctldLogFile=$LAB/log/slurmctld.log
SlurmdLogFile=$LAB/log/slurmd-%n.log
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
MailProg=/bin/true
# no usable cgroups here: track processes through /proc, bind nothing
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# the "nodes" share this machine's cores: trust the counts below, not the hardware
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
# scrontab (docs/schedule.md): the shipped entries are tested here; a cron job whose time has come waits for
# the next backfill pass (default every 30 s), so the test's firing comes within seconds of its minute
ScronParameters=enable
SchedulerParameters=bf_interval=5
SlurmctldDebug=info
SlurmdDebug=info
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$CTLIP
AccountingStoragePort=$DBD_PORT
# the slurmdbd connection ignores AuthInfo=socket=...; for munge it takes the socket from here
AccountingStoragePass=$MUNGESOCK
JobCompType=jobcomp/none
# the leaves and spine of the rails (topology.conf, next to this file): jobs packed under one leaf when they fit
TopologyPlugin=topology/tree
# per-node environment for tests: $LAB/etc/node-env/<node> holds NAME=value lines for that node's tasks
TaskProlog=$LAB/etc/taskprolog.sh
CONF
for i in $(seq 1 "$NNODES"); do
  echo "NodeName=n$i NodeHostname=n$i NodeAddr=$NET.1$i CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=4000 State=UNKNOWN"
done
echo "PartitionName=debug Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP"
echo "PartitionName=wide Nodes=n[1-$NNODES] Default=NO MaxTime=INFINITE State=UP"
} > "$LAB/etc/slurm.conf.new"
hostlist() { if [ "$1" -eq "$2" ]; then echo "n$1"; else echo "n[$1-$2]"; fi; }
{
  echo "SwitchName=s1 Nodes=$(hostlist 1 "$HALF")"
  echo "SwitchName=s2 Nodes=$(hostlist $(( HALF + 1 )) "$NNODES")"
  echo "SwitchName=spine Switches=s[1-2]"
} > "$LAB/etc/topology.conf.new"
changed=
if [ -f "$LAB/etc/slurm.conf" ]; then  # a cluster configured before: the daemons may run on the old files
  cmp -s "$LAB/etc/slurm.conf.new" "$LAB/etc/slurm.conf" || changed="slurm.conf"
  cmp -s "$LAB/etc/topology.conf.new" "$LAB/etc/topology.conf" || changed="${changed:+$changed and }topology.conf"
fi
if [ -n "$changed" ]; then
  # nodes, partitions or switches changed under a running cluster: Slurm 22.05 takes them only on a restart
  for f in "$LAB"/run/slurmd-*.pid "$LAB/run/slurmctld.pid"; do
    alive "$f" && { kill -TERM "$(cat "$f")"; for _ in $(seq 1 100); do alive "$f" || break; sleep 0.1; done; }
    rm -f "$f"
  done
  say "$changed changed: controller and nodes restarted"
fi
mv "$LAB/etc/topology.conf.new" "$LAB/etc/topology.conf"
mv "$LAB/etc/slurm.conf.new" "$LAB/etc/slurm.conf"
# the nodes' /etc/hosts; the ::ffff: lines stop torch's dual-stack TCPStore from asking DNS
{
  echo "127.0.0.1 localhost"
  echo "$CTLIP ctl $CTLHOST"
  for i in $(seq 1 "$NNODES"); do echo "$NET.1$i n$i"; done
  for i in $(seq 1 "$NNODES"); do echo "::ffff:$NET.1$i n$i"; done
} > "$LAB/etc/hosts"
mkdir -p "$LAB/etc/node-env"
cat > "$LAB/etc/taskprolog.sh" <<PROLOG
#!/bin/sh
f=$LAB/etc/node-env/\$(hostname)
[ -f "\$f" ] && sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*=.*\)\$/export \1/p' "\$f"
exit 0
PROLOG
chmod 755 "$LAB/etc/taskprolog.sh"
say "config written: $SLURM_CONF"

# ---- 5. accounting: MariaDB on loopback, slurmdbd (submitit reads job states with sacct)
mkdir -p "$LAB/mysql"
cat > "$LAB/etc/my.cnf" <<CNF
[mariadbd]
datadir=$LAB/mysql/data
socket=$LAB/mysql/mysqld.sock
pid-file=$LAB/mysql/mysqld.pid
log-error=$LAB/log/mariadb.err
user=root
bind-address=127.0.0.1
port=$DB_PORT
skip-name-resolve
performance_schema=OFF
innodb_buffer_pool_size=32M
innodb_log_file_size=16M
innodb_lock_wait_timeout=900
max_connections=50
aria_pagecache_buffer_size=8M
key_buffer_size=4M
innodb_log_buffer_size=4M
thread_cache_size=4
table_open_cache=200
table_definition_cache=200
query_cache_size=0
[client]
socket=$LAB/mysql/mysqld.sock
CNF
if [ ! -d "$LAB/mysql/data/mysql" ]; then
  mariadb-install-db --defaults-file="$LAB/etc/my.cnf" --auth-root-authentication-method=socket \
    --skip-test-db > "$LAB/log/mariadb-install.log" 2>&1
fi
alive "$LAB/mysql/mysqld.pid" || (setsid mariadbd --defaults-file="$LAB/etc/my.cnf" </dev/null >/dev/null 2>&1 &)
waitfor 60 mariadb --defaults-file="$LAB/etc/my.cnf" -uroot -e 'select 1'
mariadb --defaults-file="$LAB/etc/my.cnf" -uroot -e "
  CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'collbench';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
cat > "$LAB/etc/slurmdbd.conf" <<DBD
AuthType=auth/munge
AuthInfo=socket=$MUNGESOCK
DbdHost=$CTLHOST
DbdAddr=$CTLIP
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$LAB/log/slurmdbd.log
PidFile=$LAB/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=collbench
StorageLoc=slurm_acct_db
DBD
chmod 600 "$LAB/etc/slurmdbd.conf"
alive "$LAB/run/slurmdbd.pid" || slurmdbd
waitfor 30 bash -c "exec 3<>/dev/tcp/$CTLIP/$DBD_PORT"
say "mariadbd and slurmdbd up"

# ---- 6. slurmctld
alive "$LAB/run/slurmctld.pid" || slurmctld -f "$SLURM_CONF"
waitfor 30 scontrol ping
say "slurmctld up"

# ---- 7. one slurmd per node namespace. nsenter --net, not `ip netns exec`: the latter remounts /sys,
# hiding /sys/fs/cgroup, and slurmd 22.05 then refuses to start. Job steps inherit all three namespaces.
for i in $(seq 1 "$NNODES"); do
  alive "$LAB/run/slurmd-n$i.pid" && continue
  nsenter --net="/run/netns/cbnode$i" -- unshare --uts --mount --propagation private \
    sh -c "hostname n$i && mount --bind $LAB/etc/hosts /etc/hosts && exec slurmd -f $SLURM_CONF -N n$i"
done
# ready = every node answers (idle, or already running jobs when the cluster was up before)
waitfor 60 bash -c "[ \"\$(sinfo -h -N -p wide -o '%t' | grep -cE '^(idle|alloc|mix|comp)')\" -ge $NNODES ]"
say "cluster ready: $(sinfo -h -N -p wide -o '%N=%t' | xargs)"
[ "$(scontrol show topology | grep -c '^SwitchName=')" -eq 3 ] \
  || { echo "slurmctld does not report the 3 switches of topology.conf:" >&2; scontrol show topology >&2; exit 1; }
say "topology: $(scontrol show topology | awk '{print $1, $NF}' | xargs)"
