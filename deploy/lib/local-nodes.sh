# kvrouter nodes on this host (127.0.0.1), each its own JVM started by bin/kvrouter with environment variables only.
# Sourced by deploy/local-region.sh and deploy/local-cluster.sh, which set before using these functions:
#   root             the repository
#   nodes            how many nodes (node N is 1..nodes)
#   dir              pid files and logs
#   grpc_base, management_base, remote_base, http_base, epp_base, epp_health_base   node N listens on base + N
#   ready_timeout_s  how long start waits for each condition
# and define:
#   node_region N    the node's region (KVROUTER_REGION)
#   seed_nodes       the seed list every node gets (KVROUTER_SEED_NODES)
#   start, stop      their start and stop commands
# and end with run_command "$@".

grpc_port() { echo $((grpc_base + $1)); }
management_port() { echo $((management_base + $1)); }
remote_port() { echo $((remote_base + $1)); }
http_port() { echo $((http_base + $1)); }
epp_port() { echo $((epp_base + $1)); }
epp_health_port() { echo $((epp_health_base + $1)); }
pid_file() { echo "$dir/node-$1.pid"; }
log_file() { echo "$dir/node-$1.log"; }
management_url() { echo "http://127.0.0.1:$(management_port "$1")"; }

running_pid() { # the node's pid if its process is alive
  local file pid
  file="$(pid_file "$1")"
  [ -f "$file" ] || return 1
  pid="$(cat "$file")"
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

start_node() {
  local n="$1" pid
  if pid="$(running_pid "$n")"; then
    echo "node $n is already running (pid $pid)"
    return
  fi
  mkdir -p "$dir"
  # bin/kvrouter execs java: the pid written here is the JVM's
  KVROUTER_GRPC_HOST=127.0.0.1 KVROUTER_GRPC_PORT="$(grpc_port "$n")" \
  KVROUTER_GRPC_ADVERTISED_ENDPOINT="127.0.0.1:$(grpc_port "$n")" \
  KVROUTER_MANAGEMENT_HOST=127.0.0.1 KVROUTER_MANAGEMENT_PORT="$(management_port "$n")" \
  KVROUTER_REMOTE_HOST=127.0.0.1 KVROUTER_REMOTE_PORT="$(remote_port "$n")" \
  KVROUTER_HTTP_HOST=127.0.0.1 KVROUTER_HTTP_PORT="$(http_port "$n")" \
  KVROUTER_EPP_HOST=127.0.0.1 KVROUTER_EPP_PORT="$(epp_port "$n")" KVROUTER_EPP_HEALTH_PORT="$(epp_health_port "$n")" \
  KVROUTER_REGION="$(node_region "$n")" \
  KVROUTER_SEED_NODES="$(seed_nodes)" \
  KVROUTER_FAILURE_PROFILE="${KVROUTER_FAILURE_PROFILE:-loopback}" \
    nohup "$root/bin/kvrouter" >"$(log_file "$n")" 2>&1 &
  echo $! >"$(pid_file "$n")"
}

http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" || true; }

members_json() { curl -s --max-time 2 "$(management_url "$1")/cluster/members" || true; }

members_up() { # how many members node $1 sees Up
  members_json "$1" | grep -o '"status":"Up"' | wc -l || true
}

regions_seen() { # how many regions (data centers: each member has the role dc-<region>) node $1 sees
  members_json "$1" | grep -o '"dc-[^"]*"' | sort -u | wc -l || true
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

alive() { running_pid "$1" >/dev/null && [ "$(http_code "$(management_url "$1")/alive")" = 200 ]; }
ready() { [ "$(http_code "$(management_url "$1")/ready")" = 200 ]; }
all_up() { [ "$(members_up "$1")" -ge "$nodes" ]; }

# How often start runs a node again whose JVM exited before it was ready, as an orchestrator would: a node that
# another quarantined while it joined (Artery, seeds starting late on a loaded host) downs itself and exits, and only
# a new incarnation can join.
restarts_allowed="${KVROUTER_LOCAL_RESTARTS:-2}"
restarts_file() { echo "$dir/node-$1.restarts"; }

ready_or_restarted() { # ready_or_restarted N: true once ready; if the JVM is gone, starts it again (at most restarts_allowed)
  local n="$1" count
  ready "$n" && return 0
  running_pid "$n" >/dev/null && return 1
  count="$(cat "$(restarts_file "$n")" 2>/dev/null || echo 0)"
  [ "$count" -lt "$restarts_allowed" ] || return 1
  count=$((count + 1))
  echo "$count" >"$(restarts_file "$n")"
  mv "$(log_file "$n")" "$(log_file "$n").exited-$count" 2>/dev/null || true
  echo "node $n exited before it was ready (log: $(log_file "$n").exited-$count); starting it again ($count of $restarts_allowed)"
  start_node "$n"
  return 1
}

start_wave() { # start_wave N...: start these nodes together, then wait until each one is ready
  local n
  for n in "$@"; do rm -f "$(restarts_file "$n")"; start_node "$n"; done
  for n in "$@"; do wait_until "node $n to be ready (log: $(log_file "$n"))" ready_or_restarted "$n"; done
}

wait_all_up() { # until every node sees all nodes Up
  local n
  for n in $(seq 1 "$nodes"); do wait_until "node $n to see $nodes members Up" all_up "$n"; done
}

status() {
  local n pid format='%-5s %-10s %-8s %-16s %-24s %-16s %-24s %-16s %-6s %-11s %s\n'
  # shellcheck disable=SC2059
  printf "$format" node region pid gRPC management remoting HTTP "picker" ready "members Up" regions
  for n in $(seq 1 "$nodes"); do
    if pid="$(running_pid "$n")"; then
      # shellcheck disable=SC2059
      printf "$format" "$n" "$(node_region "$n")" "$pid" "127.0.0.1:$(grpc_port "$n")" "$(management_url "$n")" \
        "127.0.0.1:$(remote_port "$n")" "http://127.0.0.1:$(http_port "$n")" "127.0.0.1:$(epp_port "$n")" \
        "$(http_code "$(management_url "$n")/ready")" "$(members_up "$n")" \
        "$(regions_seen "$n")"
    else
      printf '%-5s %-10s %s\n' "$n" "$(node_region "$n")" "not running"
    fi
  done
  echo "logs: $dir/node-N.log"
}

stop_nodes() { # stop_nodes N...: SIGTERM to each (it leaves the cluster and exits), SIGKILL whatever is left after 30 s
  local n pid entry deadline stopping=()
  for n in "$@"; do
    if pid="$(running_pid "$n")"; then
      kill -TERM "$pid"
      stopping+=("$n:$pid")
    else
      rm -f "$(pid_file "$n")"
    fi
  done
  deadline=$((SECONDS + 30))
  for entry in ${stopping[@]+"${stopping[@]}"}; do
    n="${entry%%:*}" pid="${entry#*:}"
    until ! kill -0 "$pid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "node $n (pid $pid) did not stop within 30 s: killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
      local killed_by=$((SECONDS + 5))
      until ! kill -0 "$pid" 2>/dev/null || [ "$SECONDS" -ge "$killed_by" ]; do sleep 0.2; done
    fi
    rm -f "$(pid_file "$n")"
    echo "node $n stopped"
  done
}

crash() { # crash N: SIGKILL, to watch failover
  local n="$1" pid
  pid="$(running_pid "$n")" || { echo "node $n is not running" >&2; return 1; }
  kill -KILL "$pid"
  echo "node $n (pid $pid) killed at $(date -u +%H:%M:%S.%N | cut -c1-12) UTC"
}

run_command() { # the scripts' command line: start | status | stop | kill N
  case "${1:-}" in
    start) start ;;
    status) status ;;
    stop) stop ;;
    kill) crash "${2:?usage: $0 kill N}" || exit 1 ;;
    *) echo "usage: $0 start|status|stop|kill N" >&2; exit 2 ;;
  esac
}
