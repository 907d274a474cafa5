#!/usr/bin/env bash
# A region of kvrouter nodes on this host (127.0.0.1), each its own JVM started by bin/kvrouter with environment
# variables only, the loopback failure-detection profile, and the same seed list. See deploy/README.md.
#
#   deploy/local-region.sh start      start the nodes, wait until every one is ready and all are Up, print the ports
#   deploy/local-region.sh status     each node's process, readiness and the members it sees
#   deploy/local-region.sh kill N     crash node N (SIGKILL), to watch failover
#   deploy/local-region.sh stop       stop every node (SIGTERM: it leaves the cluster and exits; SIGKILL after 30 s)
#
# KVROUTER_LOCAL_NODES (default 3, at least 3), KVROUTER_LOCAL_DIR (pid files and logs, default target/local-region
# under the repository), KVROUTER_LOCAL_GRPC_BASE / _MANAGEMENT_BASE / _REMOTE_BASE / _HTTP_BASE / _EPP_BASE /
# _EPP_HEALTH_BASE (node N listens on base + N; defaults 50060, 8560, 25520, 8080, 9100, 9110: the OpenAI-compatible
# front of node N on 8080 + N, its endpoint picker on 9100 + N and the picker's gRPC health on 9110 + N). Every other
# KVROUTER_* variable is passed on to the nodes (KVROUTER_REGION names the region, default "default").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nodes="${KVROUTER_LOCAL_NODES:-3}"
dir="${KVROUTER_LOCAL_DIR:-$root/target/local-region}"
grpc_base="${KVROUTER_LOCAL_GRPC_BASE:-50060}"
management_base="${KVROUTER_LOCAL_MANAGEMENT_BASE:-8560}"
remote_base="${KVROUTER_LOCAL_REMOTE_BASE:-25520}"
epp_base="${KVROUTER_LOCAL_EPP_BASE:-9100}"
epp_health_base="${KVROUTER_LOCAL_EPP_HEALTH_BASE:-9110}"
http_base="${KVROUTER_LOCAL_HTTP_BASE:-8080}"
ready_timeout_s=120
# shellcheck source=lib/local-nodes.sh
. "$root/deploy/lib/local-nodes.sh"

if [ "$nodes" -lt 3 ]; then
  # keep-majority per region: of two nodes, a crash of either leaves a tie, and a tie keeps the lowest address only
  echo "KVROUTER_LOCAL_NODES=$nodes: a region needs at least 3 nodes" >&2
  exit 2
fi

node_region() { echo "${KVROUTER_REGION:-default}"; }

seed_nodes() { # every node
  local seeds="" n
  for n in $(seq 1 "$nodes"); do
    seeds="${seeds:+$seeds,}127.0.0.1:$(remote_port "$n")"
  done
  echo "$seeds"
}

start() {
  # node 1 first (a first run builds the project once, and node 1 forms the cluster), the others together
  start_wave 1
  start_wave $(seq 2 "$nodes")
  wait_all_up
  echo "region of $nodes nodes up (seed nodes $(seed_nodes), failure profile ${KVROUTER_FAILURE_PROFILE:-loopback}):"
  status
}

stop() {
  # one at a time, the highest first: the oldest node (the shard coordinator's) leaves last
  local n
  for n in $(seq "$nodes" -1 1); do stop_nodes "$n"; done
}

run_command "$@"
