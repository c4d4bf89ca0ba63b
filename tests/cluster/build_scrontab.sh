#!/usr/bin/env bash
# scrontab for Debian's Slurm: Debian 12's slurm-client ships every client command but scrontab (its
# debian/slurm-client.install leaves it out), though slurmctld serves crontabs (ScronParameters=enable).
# Built here from Debian's own source package of the installed version, linked against Debian's own
# libslurmfull: the same code SchedMD ships, about 15 s (configure dominates). Installed as
# /usr/local/bin/scrontab (PREFIX); nothing is done when a scrontab is already on PATH.
#   tests/cluster/build_scrontab.sh            (as root; up.sh runs it)
set -euo pipefail
PREFIX=${PREFIX:-/usr/local}
WORK=${WORK:-/tmp/collbench-scrontab}
command -v scrontab >/dev/null && { echo "scrontab: $(command -v scrontab)"; exit 0; }

LIBDIR=$(dirname "$(dpkg -L libslurm38 2>/dev/null | grep -m1 '/slurm-wlm/libslurmfull.so$' || true)")
[ -n "$LIBDIR" ] && [ "$LIBDIR" != . ] || LIBDIR=$(dirname "$(find /usr/lib -name libslurmfull.so -print -quit)")
[ -f "$LIBDIR/libslurmfull.so" ] || { echo "build_scrontab: no libslurmfull.so (is slurm-client installed?)" >&2; exit 1; }
missing=$(for p in gcc libc6-dev binutils; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' || echo "$p"; done | xargs)
if [ -n "$missing" ]; then
  DEBIAN_FRONTEND=noninteractive flock /var/lock/collbench-apt.lock apt-get install -y -q $missing >/dev/null 2>&1 \
    || { flock /var/lock/collbench-apt.lock apt-get update -q >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive flock /var/lock/collbench-apt.lock apt-get install -y -q $missing >/dev/null; }
fi

version=$(dpkg-query -W -f='${Version}' slurm-client)
rm -rf "$WORK" && mkdir -p "$WORK/lists/partial" && cd "$WORK"
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
for suite in "$codename" "$codename-updates"; do echo "deb-src http://deb.debian.org/debian $suite main"; done > src.list
echo "deb-src http://deb.debian.org/debian-security $codename-security main" >> src.list
apt_src=(-o Dir::Etc::SourceList="$WORK/src.list" -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$WORK/lists")
apt-get "${apt_src[@]}" update -q >/dev/null
apt-get "${apt_src[@]}" source --download-only "slurm-wlm=$version" >/dev/null 2>&1
tar xzf ./*.orig.tar.gz
cd ./slurm-*/
./configure --quiet --without-munge --disable-x11 >"$WORK/configure.log" 2>&1 || { tail -20 "$WORK/configure.log" >&2; exit 1; }
cd src/scrontab
for f in env opt parse scrontab; do gcc -c -O2 -I../.. -I../../slurm -DHAVE_CONFIG_H -o "$f.o" "$f.c"; done
for t in default_crontab usage; do  # the help texts, linked in as data (src/scrontab/Makefile.am)
  ld -r -o "$t.bino" -z noexecstack --format=binary "$t.txt"
  objcopy --rename-section .data=.rodata,alloc,load,readonly,data,contents "$t.bino"
done
gcc -o scrontab env.o opt.o parse.o scrontab.o default_crontab.bino usage.bino \
  -L"$LIBDIR" -lslurmfull -Wl,-rpath,"$LIBDIR" -ldl
install -m 755 scrontab "$PREFIX/bin/scrontab"
echo "scrontab: built from slurm-wlm $version into $PREFIX/bin/scrontab"
