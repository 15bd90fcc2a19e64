#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, from Debian's packages, without systemd: for trying
# EXECUTOR=slurm where no cluster is at hand, and for CI. Idempotent: a cluster that already
# answers is left as it is. Needs root (it installs packages and starts munged, slurmctld, slurmd).
#   campaign/executors/slurm-one-node.sh          start it (installing slurm-wlm and munge if absent)
#   campaign/executors/slurm-one-node.sh stop     stop it
set -euo pipefail

conf=/etc/slurm/slurm.conf
if [ "${1:-start}" = stop ]; then
  pkill -x slurmd || true; pkill -x slurmctld || true; pkill -x munged || true
  exit 0
fi
if sinfo -h >/dev/null 2>&1 && scontrol ping 2>/dev/null | grep -q UP; then
  echo "slurm: a cluster already answers ($(sinfo -h -o '%D node(s), partition %P, state %t' | head -1))"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "error: starting a Slurm cluster needs root; run it as root or use your site's cluster" >&2; exit 2; }

need=()
for pkg in slurm-wlm munge; do dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg"); done
if ((${#need[@]})); then
  # Package scripts must not try to start services (no systemd here): a policy-rc.d that says no.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi

cpus=$(nproc)
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 9 / 10 ))
host=$(hostname -s)
cat >"$conf" <<CONF
# Written by dlrepro's campaign/executors/slurm-one-node.sh: one node, no accounting.
ClusterName=dlrepro
SlurmctldHost=${host}(127.0.0.1)
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
# A cancelled task gets SIGTERM, then SIGKILL this many seconds later: time to record the run as failed.
KillWait=20
MinJobAge=600
NodeName=node1 NodeHostname=${host} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${mem_mb} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF

install -d -o munge -g munge -m 0755 /run/munge
install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
install -d -o slurm -g slurm -m 0755 /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm
[ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 2>/dev/null; }
chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key

pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd -N node1
for _ in $(seq 60); do
  sinfo -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)' && break
  sleep 1
done
if ! sinfo -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
  tail -5 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
  echo "error: the one-node Slurm cluster did not come up; see /var/log/slurm/" >&2
  exit 1
fi
echo "slurm: one-node cluster up ($(sinfo -h -o 'node %N, %c CPUs, partition %P, state %t' | head -1))"
