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
# under the repository), KVROUTER_LOCAL_GRPC_BASE / _MANAGEMENT_BASE / _REMOTE_BASE (node N listens on base + N;
# defaults 50060, 8560, 25520). Every other KVROUTER_* variable is passed on to the nodes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nodes="${KVROUTER_LOCAL_NODES:-3}"
dir="${KVROUTER_LOCAL_DIR:-$root/target/local-region}"
grpc_base="${KVROUTER_LOCAL_GRPC_BASE:-50060}"
management_base="${KVROUTER_LOCAL_MANAGEMENT_BASE:-8560}"
remote_base="${KVROUTER_LOCAL_REMOTE_BASE:-25520}"
ready_timeout_s=120

if [ "$nodes" -lt 3 ]; then
  # keep-majority per region: of two nodes, a crash of either leaves a tie, and a tie keeps the lowest address only
  echo "KVROUTER_LOCAL_NODES=$nodes: a region needs at least 3 nodes" >&2
  exit 2
fi

grpc_port() { echo $((grpc_base + $1)); }
management_port() { echo $((management_base + $1)); }
remote_port() { echo $((remote_base + $1)); }
pid_file() { echo "$dir/node-$1.pid"; }
log_file() { echo "$dir/node-$1.log"; }

running_pid() { # the node's pid if its process is alive
  local file pid
  file="$(pid_file "$1")"
  [ -f "$file" ] || return 1
  pid="$(cat "$file")"
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

seed_nodes() {
  local seeds="" n
  for n in $(seq 1 "$nodes"); do
    seeds="${seeds:+$seeds,}127.0.0.1:$(remote_port "$n")"
  done
  echo "$seeds"
}

start_node() {
  local n="$1"
  if pid="$(running_pid "$n")"; then
    echo "node $n is already running (pid $pid)"
    return
  fi
  mkdir -p "$dir"
  KVROUTER_GRPC_HOST=127.0.0.1 KVROUTER_GRPC_PORT="$(grpc_port "$n")" \
  KVROUTER_MANAGEMENT_HOST=127.0.0.1 KVROUTER_MANAGEMENT_PORT="$(management_port "$n")" \
  KVROUTER_REMOTE_HOST=127.0.0.1 KVROUTER_REMOTE_PORT="$(remote_port "$n")" \
  KVROUTER_SEED_NODES="$(seed_nodes)" \
  KVROUTER_FAILURE_PROFILE="${KVROUTER_FAILURE_PROFILE:-loopback}" \
    nohup "$root/bin/kvrouter" >"$(log_file "$n")" 2>&1 &
  echo $! >"$(pid_file "$n")"
}

http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" || true; }

members_up() { # how many members node $1 sees Up
  curl -s --max-time 2 "http://127.0.0.1:$(management_port "$1")/cluster/members" \
    | grep -o '"status":"Up"' | wc -l || true
}

wait_until() { # wait_until DESCRIPTION COMMAND...: polls every 0.5 s, at most ready_timeout_s
  local what="$1" deadline=$((SECONDS + ready_timeout_s))
  shift
  until "$@"; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "timed out after ${ready_timeout_s}s waiting for $what (logs: $dir)" >&2
      return 1
    fi
    sleep 0.5
  done
}

alive() { running_pid "$1" >/dev/null && [ "$(http_code "http://127.0.0.1:$(management_port "$1")/alive")" = 200 ]; }
ready() { [ "$(http_code "http://127.0.0.1:$(management_port "$1")/ready")" = 200 ]; }
all_up() { [ "$(members_up "$1")" -ge "$nodes" ]; }

start() {
  # node 1 first: a first run builds the project once (bin/kvrouter), then the others start beside it
  start_node 1
  wait_until "node 1 to start (log: $(log_file 1))" alive 1
  for n in $(seq 2 "$nodes"); do start_node "$n"; done
  for n in $(seq 1 "$nodes"); do
    wait_until "node $n to be ready" ready "$n"
    wait_until "node $n to see $nodes members Up" all_up "$n"
  done
  echo "region of $nodes nodes up (seed nodes $(seed_nodes), failure profile ${KVROUTER_FAILURE_PROFILE:-loopback}):"
  status
}

status() {
  local n pid
  printf '%-5s %-8s %-16s %-24s %-16s %-6s %s\n' node pid gRPC management remoting ready "members Up"
  for n in $(seq 1 "$nodes"); do
    if pid="$(running_pid "$n")"; then
      printf '%-5s %-8s %-16s %-24s %-16s %-6s %s\n' "$n" "$pid" "127.0.0.1:$(grpc_port "$n")" \
        "http://127.0.0.1:$(management_port "$n")" "127.0.0.1:$(remote_port "$n")" \
        "$(http_code "http://127.0.0.1:$(management_port "$n")/ready")" "$(members_up "$n")"
    else
      printf '%-5s %s\n' "$n" "not running"
    fi
  done
  echo "logs: $dir/node-N.log"
}

stop_node() {
  local n="$1" pid deadline
  if ! pid="$(running_pid "$n")"; then
    rm -f "$(pid_file "$n")"
    return
  fi
  kill -TERM "$pid"
  deadline=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "node $n (pid $pid) did not stop within 30 s: killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  rm -f "$(pid_file "$n")"
  echo "node $n stopped"
}

stop() {
  # the highest first: the oldest node (the shard coordinator's) leaves last
  for n in $(seq "$nodes" -1 1); do stop_node "$n"; done
}

crash() {
  local n="${1:?usage: $0 kill N}" pid
  pid="$(running_pid "$n")" || { echo "node $n is not running" >&2; exit 1; }
  kill -KILL "$pid"
  echo "node $n (pid $pid) killed at $(date -u +%H:%M:%S.%N | cut -c1-12) UTC"
}

case "${1:-}" in
  start) start ;;
  status) status ;;
  stop) stop ;;
  kill) crash "${2:-}" ;;
  *) echo "usage: $0 start|status|stop|kill N" >&2; exit 2 ;;
esac
