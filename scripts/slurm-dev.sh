#!/usr/bin/env bash
# A real Slurm cluster on this machine, for tidal's Slurm tests and by hand
# (docs/slurm.md): munged, slurmctld and one slurmd per node, all on
# loopback, every file under one folder. Debian 12's Slurm 22.05.
#
#   scripts/slurm-dev.sh start DIR [NODES] [GPUS_PER_NODE]   # prints the SLURM_CONF to export
#   scripts/slurm-dev.sh stop DIR
#   scripts/slurm-dev.sh status DIR
#
# The nodes are n0..n{NODES-1} (default 4), all NodeHostname=localhost with a
# port each; each has GPUS_PER_NODE (default 8) GPUs of GRES type h100 whose device files are
# character devices made with mknod in DIR/dev (major 195, as NVIDIA's); two
# nodes per leaf switch under one spine (topology.conf). Jobs run as the
# caller (root here), with proctrack/linuxproc and no cgroups, so it works
# in a container. Needs the packages slurm-wlm and munge (scripts/setup.sh).
# Exit 77 when they are missing (ctest's skip code).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [[ -z "$cmd" || -z "$dir" ]]; then
  echo "usage: $0 start|stop|status DIR [NODES] [GPUS_PER_NODE]" >&2
  exit 2
fi

stop() {
  local d=$1
  for pidfile in "$d"/run/slurmd-*.pid "$d"/run/slurmctld.pid "$d"/run/munged.pid; do
    [[ -f "$pidfile" ]] || continue
    local pid
    pid=$(cat "$pidfile" 2>/dev/null || true)
    [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
  done
  # Give them a moment, then make sure (jobs' processes too: slurmstepd).
  for _ in $(seq 1 50); do
    local alive=0
    for pidfile in "$d"/run/slurmd-*.pid "$d"/run/slurmctld.pid "$d"/run/munged.pid; do
      [[ -f "$pidfile" ]] || continue
      kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null && alive=1
    done
    ((alive)) || break
    sleep 0.1
  done
  pkill -9 -f "slurmstepd.*$d" 2>/dev/null || true
  for pidfile in "$d"/run/slurmd-*.pid "$d"/run/slurmctld.pid "$d"/run/munged.pid; do
    [[ -f "$pidfile" ]] || continue
    kill -9 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null || true
    rm -f "$pidfile"
  done
}

case "$cmd" in
  stop)
    stop "$dir"
    exit 0
    ;;
  status)
    SLURM_CONF="$dir/etc/slurm.conf" sinfo -N -o "%N %t %G"
    exit 0
    ;;
  start) ;;
  *)
    echo "$0: unknown command '$cmd' (start, stop, status)" >&2
    exit 2
    ;;
esac

nodes=${3:-4}
gpus=${4:-8}
for bin in munged slurmctld slurmd sbatch scontrol squeue; do
  if ! command -v "$bin" >/dev/null; then
    echo "slurm-dev: $bin is not installed; install the Debian packages slurm-wlm and munge (scripts/setup.sh does)" >&2
    exit 77
  fi
done

dir=$(mkdir -p "$dir" && cd "$dir" && pwd)
mkdir -p "$dir"/{etc,log,run,state,spool,dev}
chmod 700 "$dir" "$dir/run"
stop "$dir"

# Ports: slurmctld, then one per slurmd, from a base no one listens on.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
base=${TIDAL_SLURM_PORT:-16817}
for _ in $(seq 1 50); do
  ok=1
  for p in $(seq "$base" $((base + nodes + 1))); do port_free "$p" || { ok=0; break; }; done
  ((ok)) && break
  base=$((base + 100))
done

[[ -f "$dir/munge.key" ]] || { dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none; chmod 400 "$dir/munge.key"; }
for ((g = 0; g < gpus; ++g)); do
  [[ -e "$dir/dev/nvidia$g" ]] || mknod "$dir/dev/nvidia$g" c 195 "$g"
done

last=$((nodes - 1))
{
  cat <<EOF
# Written by scripts/slurm-dev.sh: a local test cluster (docs/slurm.md).
ClusterName=tidaldev
SlurmctldHost=localhost
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/run/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
TopologyPlugin=topology/tree
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SlurmdParameters=config_overrides
MinJobAge=3600
KillWait=2
JobSubmitPlugins=lua
EOF
  for ((n = 0; n < nodes; ++n)); do
    echo "NodeName=n$n NodeHostname=localhost Port=$((base + 2 + n)) CPUs=8 RealMemory=4000 Gres=gpu:h100:$gpus State=UNKNOWN"
  done
  echo "PartitionName=tidal Nodes=n[0-$last] Default=YES MaxTime=INFINITE State=UP"
} >"$dir/etc/slurm.conf"
echo "NodeName=n[0-$last] Name=gpu Type=h100 File=$dir/dev/nvidia[0-$((gpus - 1))]" >"$dir/etc/gres.conf"
# Users' own sbatch jobs in partition tidal are held for tidal to adopt.
cp "$(dirname "$0")/../data/slurm/job_submit.lua" "$dir/etc/job_submit.lua"
{
  leaves=()
  for ((n = 0; n < nodes; n += 2)); do
    hi=$((n + 1 > last ? last : n + 1))
    echo "SwitchName=leaf$((n / 2)) Nodes=n[$n-$hi]"
    leaves+=("leaf$((n / 2))")
  done
  echo "SwitchName=spine Switches=$(IFS=,; echo "${leaves[*]}")"
} >"$dir/etc/topology.conf"

export SLURM_CONF="$dir/etc/slurm.conf"
munged -f --socket="$dir/run/munge.sock" --key-file="$dir/munge.key" --log-file="$dir/log/munged.log" \
  --pid-file="$dir/run/munged.pid" --seed-file="$dir/run/munged.seed"
slurmctld -f "$SLURM_CONF"
for ((n = 0; n < nodes; ++n)); do
  mkdir -p "$dir/spool/n$n"
  slurmd -f "$SLURM_CONF" -N "n$n"
done

# Ready when every node is idle.
for _ in $(seq 1 100); do
  idle=$(sinfo -h -N -t idle -o "%N" 2>/dev/null | sort -u | wc -l || true)
  [[ "$idle" -eq "$nodes" ]] && { echo "$SLURM_CONF"; exit 0; }
  sleep 0.2
done
echo "slurm-dev: the nodes did not become idle; see $dir/log" >&2
sinfo -N -l >&2 || true
exit 1
