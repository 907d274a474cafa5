#!/usr/bin/env bash
# A cluster of three regions of three kvrouter nodes on this host (127.0.0.1): nine JVMs started by bin/kvrouter with
# environment variables only. Each region is a Pekko data center (KVROUTER_REGION); all nine nodes get the same seed
# list (the first node of each region), since a multi-region cluster is one cluster; the loopback failure-detection
# profile. Three nodes per region so that each region's split-brain resolver survives the loss of one.
# See deploy/README.md.
#
#   deploy/local-cluster.sh start      start the nodes, wait until every one is ready and sees all nodes Up, print them
#   deploy/local-cluster.sh status     each node's region, process, ports, readiness, members Up and regions seen
#   deploy/local-cluster.sh kill N     crash node N (SIGKILL; N as in the status table), to watch failover
#   deploy/local-cluster.sh stop       stop every node (SIGTERM: it leaves the cluster and exits; SIGKILL after 30 s)
#
# KVROUTER_LOCAL_REGIONS (space-separated, default "eu-west us-east ap-south"), KVROUTER_LOCAL_NODES_PER_REGION
# (default 3, at least 3), KVROUTER_LOCAL_DIR (pid files and logs, default target/local-cluster under the
# repository), KVROUTER_LOCAL_GRPC_BASE / _MANAGEMENT_BASE / _REMOTE_BASE / _HTTP_BASE / _EPP_BASE / _EPP_HEALTH_BASE
# (node N listens on base + N; defaults 50070, 8570, 25530, 8090, 9120, 9130), KVROUTER_LOCAL_READY_TIMEOUT (seconds start waits for each node, default 240).
# KVROUTER_JAVA_OPTS defaults to a small heap (nine JVMs share this host); KVROUTER_FD_ACCEPTABLE_HEARTBEAT_PAUSE and
# KVROUTER_SBR_STABLE_AFTER default to 8s and 3s (below). Every other KVROUTER_* variable is passed on to the nodes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
read -r -a regions <<<"${KVROUTER_LOCAL_REGIONS:-eu-west us-east ap-south}"
per_region="${KVROUTER_LOCAL_NODES_PER_REGION:-3}"
nodes=$((${#regions[@]} * per_region))
dir="${KVROUTER_LOCAL_DIR:-$root/target/local-cluster}"
grpc_base="${KVROUTER_LOCAL_GRPC_BASE:-50070}"
management_base="${KVROUTER_LOCAL_MANAGEMENT_BASE:-8570}"
remote_base="${KVROUTER_LOCAL_REMOTE_BASE:-25530}"
epp_base="${KVROUTER_LOCAL_EPP_BASE:-9120}"
epp_health_base="${KVROUTER_LOCAL_EPP_HEALTH_BASE:-9130}"
http_base="${KVROUTER_LOCAL_HTTP_BASE:-8090}"
ready_timeout_s="${KVROUTER_LOCAL_READY_TIMEOUT:-240}"
# nine JVMs on a small host: a small heap, the serial collector, and the C1 compiler only (far less JIT work at start)
export KVROUTER_JAVA_OPTS="${KVROUTER_JAVA_OPTS:--Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1}"
# The loopback profile, with more patience than its 1.5 s heartbeat pause: nine JVMs starting on two cores delay one
# another's heartbeats by seconds, and a region whose members look unreachable is downed by its resolver. A crash is
# then acted on after about 8 s + 3 s instead of 1.5 s + 2 s.
export KVROUTER_FD_ACCEPTABLE_HEARTBEAT_PAUSE="${KVROUTER_FD_ACCEPTABLE_HEARTBEAT_PAUSE:-8s}"
export KVROUTER_SBR_STABLE_AFTER="${KVROUTER_SBR_STABLE_AFTER:-3s}"
# shellcheck source=lib/local-nodes.sh
. "$root/deploy/lib/local-nodes.sh"

if [ "$per_region" -lt 3 ]; then
  # keep-majority per region: of two nodes, a crash of either leaves a tie, and a tie keeps the lowest address only
  echo "KVROUTER_LOCAL_NODES_PER_REGION=$per_region: a region needs at least 3 nodes" >&2
  exit 2
fi

node_region() { echo "${regions[$((($1 - 1) / per_region))]}"; }

first_of_each_region() { seq 1 "$per_region" "$nodes"; }

seed_nodes() { # the first node of each region, the same list on every node
  local seeds="" n
  for n in $(first_of_each_region); do
    seeds="${seeds:+$seeds,}127.0.0.1:$(remote_port "$n")"
  done
  echo "$seeds"
}

regions_complete() { [ "$(regions_seen "$1")" -ge "${#regions[@]}" ]; }

start() {
  # in waves, so that at most one region's JVMs start at a time on a small host: node 1 first (a first run builds the
  # project once, and node 1 forms the cluster), then the rest of its region, then each other region
  local n region
  start_wave 1
  start_wave $(seq 2 "$per_region")
  for region in $(seq 2 "${#regions[@]}"); do
    start_wave $(seq $(((region - 1) * per_region + 1)) $((region * per_region)))
  done
  wait_all_up
  for n in $(seq 1 "$nodes"); do
    wait_until "node $n to see ${#regions[@]} regions" regions_complete "$n"
  done
  echo "cluster of ${#regions[@]} regions x $per_region nodes up (seed nodes $(seed_nodes)," \
    "failure profile ${KVROUTER_FAILURE_PROFILE:-loopback}, heartbeat pause $KVROUTER_FD_ACCEPTABLE_HEARTBEAT_PAUSE," \
    "stable-after $KVROUTER_SBR_STABLE_AFTER):"
  status
}

stop() {
  # every node but each region's oldest together, then those: a region's shard coordinator runs on its oldest node
  local n others=() firsts=()
  for n in $(seq 1 "$nodes"); do
    if [ $(((n - 1) % per_region)) -eq 0 ]; then firsts+=("$n"); else others+=("$n"); fi
  done
  stop_nodes "${others[@]}"
  stop_nodes "${firsts[@]}"
}

run_command "$@"
