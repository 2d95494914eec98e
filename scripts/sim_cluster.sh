#!/usr/bin/env bash
# A simulated cluster on one machine: NODES network namespaces ("nodes"),
# each joined to one bridge (the "switch", in a namespace of its own) by a
# veth pair whose two ends are limited to RATE with a token-bucket filter
# (tc tbf), so every node has a full-duplex link of RATE to a non-blocking
# switch, as on a cluster's network. Needs root (ip netns, tc).
#
#   scripts/sim_cluster.sh up   NAME NODES RATE     RATE: a tc rate (1gbit, 250mbit) or "unlimited"
#   scripts/sim_cluster.sh run  NAME NODES PER_NODE LOGDIR -- COMMAND [ARGS...]
#   scripts/sim_cluster.sh mpirun NAME NODES PER_NODE LOGDIR -- COMMAND [ARGS...]
#   scripts/sim_cluster.sh sent NAME NODE          bytes NODE's uplink has sent through its limit
#   scripts/sim_cluster.sh down NAME
#
# SIM_BURST_MS (default 8): the token bucket of `up`, in ms of traffic.
#
# `run` starts NODES x PER_NODE ranks of COMMAND, each inside its node's
# namespace with the variables srun sets (SLURM_PROCID, SLURM_NODEID, ...),
# MASTER_ADDR on node 0 and GLOO_SOCKET_IFNAME; rank r writes
# LOGDIR/rank<r>.log. It waits for all and exits with the first failure,
# printing the failed ranks' last lines. Every node has its own ports, so
# runs on different clusters never collide. `mpirun` starts the same ranks
# with Open MPI's mpirun, run on node 0 and reaching the other nodes with
# this script as its rsh agent (`agent`); every node has a host name of its
# own (node0, node1, ...: MPI tells nodes apart by it); the log is
# LOGDIR/mpirun.log.
set -euo pipefail

usage() { sed -n '2,24p' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd="$1" name="$2"
[[ "$name" =~ ^[a-z0-9]{1,8}$ ]] || { echo "sim_cluster: NAME '$name' must be 1-8 of [a-z0-9]" >&2; exit 2; }
switch="$name-sw"
node_ns() { echo "$name-n$1"; }
# Each cluster's namespaces see only each other, so every cluster can use the same addresses.
node_addr() { echo "10.77.0.$(( $1 + 1 ))"; }

limit() {  # $1 = namespace, $2 = device, $3 = rate
  [ "$3" = unlimited ] && return
  # burst: SIM_BURST_MS (default 8) ms of traffic, at least 64 KB (a GSO
  # super-packet); a transfer after an idle gap passes that much at once,
  # which a real link does not: benches of many small transfers set it to 1.
  # latency bounds the queue.
  local bits ms="${SIM_BURST_MS:-8}"
  [[ "$ms" =~ ^[1-9][0-9]*$ ]] || { echo "sim_cluster: SIM_BURST_MS '$ms' must be a positive integer" >&2; exit 2; }
  bits="$(tc_rate_bits "$3")"
  local burst=$(( bits / 8 * ms / 1000 > 65536 ? bits / 8 * ms / 1000 : 65536 ))
  ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$3" burst "$burst" latency 100ms
}
tc_rate_bits() {  # 1gbit, 250mbit, 800kbit -> bits per second
  local r="${1,,}"
  [[ "$r" =~ ^[1-9][0-9]*(gbit|mbit|kbit)$ ]] || r=bad
  case "$r" in
    *gbit) echo $(( ${r%gbit} * 1000000000 )) ;;
    *mbit) echo $(( ${r%mbit} * 1000000 )) ;;
    *kbit) echo $(( ${r%kbit} * 1000 )) ;;
    *) echo "sim_cluster: RATE '$1' must be <n>gbit, <n>mbit, <n>kbit or unlimited" >&2; exit 2 ;;
  esac
}

up() {  # NODES RATE
  local nodes="$1" rate="$2"
  [[ "$nodes" =~ ^[0-9]+$ && "$nodes" -ge 1 && "$nodes" -le 16 ]] || { echo "sim_cluster: NODES '$nodes' must be 1-16" >&2; exit 2; }
  [ "$rate" = unlimited ] || tc_rate_bits "$rate" > /dev/null
  down 2>/dev/null || true
  ip netns add "$switch"
  ip -n "$switch" link add br0 type bridge
  ip -n "$switch" link set br0 up
  for i in $(seq 0 $(( nodes - 1 ))); do
    local ns
    ns="$(node_ns "$i")"
    ip netns add "$ns"
    ip -n "$switch" link add "port$i" type veth peer name eth0 netns "$ns"
    ip -n "$switch" link set "port$i" master br0 up
    ip -n "$ns" addr add "$(node_addr "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    limit "$ns" eth0 "$rate"             # the node's uplink
    limit "$switch" "port$i" "$rate"     # its downlink
  done
}

down() {
  local ns
  for ns in $(ip netns list | awk '{ print $1 }' | grep -E "^$name-(sw|n[0-9]+)$" || true); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns"
  done
}

check_launch() {  # NODES PER_NODE [--] COMMAND...: run's and mpi_run's arguments
  [[ "$1" =~ ^[1-9][0-9]*$ && "$2" =~ ^[1-9][0-9]*$ ]] ||
    { echo "sim_cluster: NODES '$1' and PER_NODE '$2' must be positive integers" >&2; exit 2; }
  shift 2
  [ "${1:-}" = "--" ] && shift
  [ $# -ge 1 ] || usage
}

run() {  # NODES PER_NODE LOGDIR -- COMMAND...
  local nodes="$1" per_node="$2" logdir="$3"
  shift 3
  check_launch "$nodes" "$per_node" "$@"
  [ "${1:-}" = "--" ] && shift
  mkdir -p "$logdir"
  local world=$(( nodes * per_node )) pids=() rank
  for rank in $(seq 0 $(( world - 1 ))); do
    local node=$(( rank / per_node ))
    ip netns exec "$(node_ns "$node")" env SLURM_JOB_ID=4242 SLURM_JOB_NAME=sim-cluster SLURM_STEP_ID=0 \
      SLURM_NTASKS="$world" SLURM_NNODES="$nodes" SLURM_NTASKS_PER_NODE="$per_node" SLURM_PROCID="$rank" \
      SLURM_LOCALID=$(( rank % per_node )) SLURM_NODEID="$node" SLURM_NODELIST="node[0-$(( nodes - 1 ))]" \
      MASTER_ADDR="$(node_addr 0)" MASTER_PORT=29500 GLOO_SOCKET_IFNAME=eth0 \
      "$@" > "$logdir/rank$rank.log" 2>&1 &
    pids+=($!)
  done
  local status=0 code
  for rank in "${!pids[@]}"; do
    code=0
    wait "${pids[$rank]}" || code=$?
    if [ "$code" != 0 ]; then
      echo "sim_cluster: rank $rank exited with $code; last lines of $logdir/rank$rank.log:" >&2
      tail -n 5 "$logdir/rank$rank.log" >&2
      [ "$status" != 0 ] || status="$code"
    fi
  done
  return "$status"
}

mpi_run() {  # NODES PER_NODE LOGDIR -- COMMAND...
  local nodes="$1" per_node="$2" logdir="$3"
  shift 3
  check_launch "$nodes" "$per_node" "$@"
  [ "${1:-}" = "--" ] && shift
  mkdir -p "$logdir"
  local hosts="" i
  for i in $(seq 0 $(( nodes - 1 ))); do hosts+="${hosts:+,}$(node_addr "$i"):$per_node"; done
  local status=0
  ip netns exec "$(node_ns 0)" unshare --uts bash -c 'hostname node0 && exec "$@"' mpirun \
    mpirun --allow-run-as-root --host "$hosts" -np $(( nodes * per_node )) \
    --mca plm_rsh_agent "bash $(readlink -f "$0") agent $name" \
    --mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0 \
    "$@" > "$logdir/mpirun.log" 2>&1 || status=$?
  if [ "$status" != 0 ]; then
    echo "sim_cluster: mpirun exited with $status; last lines of $logdir/mpirun.log:" >&2
    tail -n 10 "$logdir/mpirun.log" >&2
  fi
  return "$status"
}

agent() {  # HOST COMMAND...: mpirun's rsh agent, COMMAND (one shell line, as ssh takes it) on HOST's node
  local host="$1"
  shift
  local node=$(( ${host##*.} - 1 ))
  exec ip netns exec "$(node_ns "$node")" unshare --uts bash -c "hostname node$node && exec $*"
}

sent() {  # NODE
  ip netns exec "$(node_ns "$1")" tc -s qdisc show dev eth0 | sed -n 's/^ *Sent \([0-9]*\) bytes.*/\1/p' | head -n 1
}

case "$cmd" in
  up) [ $# -eq 4 ] || usage; up "$3" "$4" ;;
  down) [ $# -eq 2 ] || usage; down ;;
  sent) [ $# -eq 3 ] || usage; sent "$3" ;;
  run) [ $# -ge 6 ] || usage; shift 2; run "$@" ;;
  mpirun) [ $# -ge 6 ] || usage; shift 2; mpi_run "$@" ;;
  agent) [ $# -ge 4 ] || usage; shift 2; agent "$@" ;;
  *) usage ;;
esac
