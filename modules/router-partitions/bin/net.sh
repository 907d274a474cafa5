#!/usr/bin/env bash
# Network plumbing of the partition harness: network namespaces on one private bridge, nftables rules that cut links
# between them, and toxiproxy (a delaying TCP proxy) in the remoting path for slow links. Root only (CI runs as
# root). Nothing here addresses anything but the links it creates.
#
# The addresses (the one place they are defined; PartitionsNetwork.java reads them from `net.sh addresses`):
#   subnet       10.231.0.0/24, on the bridge kvpbr0 inside the namespace kvp-hub (not in the host's namespace:
#                the hub has no route anywhere else, so nothing can leave the machine)
#   hub          10.231.0.100 on kvpbr0: the harness, its clients and toxiproxy run in kvp-hub
#   node N       (1..9) namespace kvp-nN, interface eth0 = 10.231.0.N/24, a veth pair to kvpN on the bridge;
#                every node listens on its own address with the router's default ports (gRPC 50051, management
#                8558, remoting 25520): each namespace has its own ports
#   toxiproxy    API 10.231.0.100:8474 (kvp-hub); the proxy of the directed link i -> j listens on
#                10.231.0.100:(26000 + 10 i + j) and forwards to 10.231.0.j:25520
#
#   net.sh setup N                 create the hub and nodes 1..N (replaces whatever an earlier run left)
#   net.sh cut A B                 drop every packet between nodes A and B, both ways
#   net.sh cut-oneway A B          drop the packets from A to B (B still reaches A)
#   net.sh isolate A B...          cut A from each of B...
#   net.sh heal                    remove every cut (slow links stay: see unslow)
#   net.sh proxy-start N           start toxiproxy in the hub with a proxy per directed link between nodes 1..N, and
#                                  send each node's remoting connections to its peers through it (nftables DNAT in
#                                  the sender's namespace); call before the nodes start, connections made earlier
#                                  keep their direct path
#   net.sh slow A B MS JITTER      delay the bytes of link A -> B by MS +- JITTER ms (toxiproxy latency toxic)
#   net.sh unslow                  remove every delay
#   net.sh proxy-stop              stop toxiproxy and remove the redirections (between scenarios)
#   net.sh rules                   print every node's nftables ruleset (what is cut)
#   net.sh cleanup                 stop toxiproxy, delete every kvp-* namespace this script made (veths, the bridge and
#                                  rules go with them); the processes inside must be stopped first (bin/partitions does)
#   net.sh addresses               print "hub <ip>", "node N <ip>" lines and the ports
set -euo pipefail

subnet_prefix=10.231.0
hub_ip=$subnet_prefix.100
hub_ns=kvp-hub
bridge=kvpbr0
remote_port=25520
toxiproxy_api_port=8474
proxy_base=26000
max_nodes=9
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
state_dir="${KVROUTER_PARTITIONS_STATE:-$root/modules/router-partitions/target/net}"
# toxiproxy, built from its Go module by `net.sh install-toxiproxy` (bin/partitions calls it when missing)
toxiproxy_version=v2.12.0
toxiproxy_bin="$root/modules/router-partitions/target/tools/toxiproxy-server"

die() { echo "net.sh: $*" >&2; exit 1; }
node_ns() { echo "kvp-n$1"; }
node_ip() { echo "$subnet_prefix.$1"; }
in_ns() { local ns="$1"; shift; ip netns exec "$ns" "$@"; }
check_node() { [[ "$1" =~ ^[1-9]$ ]] && [ "$1" -le "$max_nodes" ] || die "node '$1' is not 1..$max_nodes"; }
proxy_port() { echo $((proxy_base + 10 * $1 + $2)); }

require_root() { [ "$(id -u)" = 0 ] || die "needs root (ip netns, nftables)"; }

setup() {
  local n="$1" i ns
  [[ "$n" =~ ^[1-9]$ ]] || die "setup: node count '$n' is not 1..$max_nodes"
  command -v nft >/dev/null || die "nft not found: apt-get install nftables"
  cleanup_namespaces
  mkdir -p "$state_dir"
  ip netns add "$hub_ns"
  in_ns "$hub_ns" ip link set lo up
  in_ns "$hub_ns" ip link add "$bridge" type bridge
  in_ns "$hub_ns" ip addr add "$hub_ip/24" dev "$bridge"
  in_ns "$hub_ns" ip link set "$bridge" up
  for i in $(seq 1 "$n"); do
    ns="$(node_ns "$i")"
    ip netns add "$ns"
    in_ns "$ns" ip link set lo up
    # the pair is made inside the hub, then one end moves into the node: nothing is ever in the host's namespace
    in_ns "$hub_ns" ip link add "kvp$i" type veth peer name eth0 netns "$ns"
    in_ns "$hub_ns" ip link set "kvp$i" master "$bridge" up
    in_ns "$ns" ip addr add "$(node_ip "$i")/24" dev eth0
    in_ns "$ns" ip link set eth0 up
    in_ns "$ns" nft -f - <<EOF
table inet kvpart {
  chain input { type filter hook input priority 0; policy accept; }
  chain output { type filter hook output priority 0; policy accept; }
}
table ip kvpslow {
  chain output { type nat hook output priority -100; policy accept; }
}
EOF
  done
  echo "$n" >"$state_dir/nodes"
}

node_count() { cat "$state_dir/nodes" 2>/dev/null || die "no network set up (net.sh setup N)"; }

# The rules match the original addresses of a connection (ct original), so a cut also holds for a link whose
# connections are redirected through toxiproxy.
drop_from_to() { # drop_from_to A B: packets A sends to B are dropped, in A's output and B's input
  local a="$1" b="$2"
  in_ns "$(node_ns "$a")" nft add rule inet kvpart output ip daddr "$(node_ip "$b")" drop comment "\"cut $a-$b\""
  in_ns "$(node_ns "$a")" nft add rule inet kvpart output ct original ip daddr "$(node_ip "$b")" drop \
    comment "\"cut $a-$b\""
  in_ns "$(node_ns "$b")" nft add rule inet kvpart input ip saddr "$(node_ip "$a")" drop comment "\"cut $a-$b\""
}

cut() {
  check_node "$1"; check_node "$2"
  drop_from_to "$1" "$2"; drop_from_to "$2" "$1"
}

cut_oneway() {
  check_node "$1"; check_node "$2"
  drop_from_to "$1" "$2"
}

heal() {
  local i n
  n="$(node_count)"
  for i in $(seq 1 "$n"); do
    in_ns "$(node_ns "$i")" nft flush chain inet kvpart input
    in_ns "$(node_ns "$i")" nft flush chain inet kvpart output
  done
}

toxi() { # toxi METHOD PATH [BODY]: toxiproxy's HTTP API, from inside the hub
  local method="$1" path="$2" body="${3:-}"
  in_ns "$hub_ns" curl -sS --fail-with-body --max-time 5 -X "$method" -H 'Content-Type: application/json' \
    ${body:+--data "$body"} "http://$hub_ip:$toxiproxy_api_port$path"
}
toxi_post() { toxi POST "$1" "$2"; }

install_toxiproxy() {
  [ -x "$toxiproxy_bin" ] && return
  command -v go >/dev/null || die "go not found: toxiproxy is built from its Go module (github.com/Shopify/toxiproxy/v2)"
  mkdir -p "$(dirname "$toxiproxy_bin")"
  local gobin
  gobin="$(mktemp -d)"
  GOBIN="$gobin" GOFLAGS=-mod=mod go install "github.com/Shopify/toxiproxy/v2/cmd/server@$toxiproxy_version"
  mv "$gobin/server" "$toxiproxy_bin"
  rmdir "$gobin"
}

proxy_start() {
  local n="$1" a b deadline
  install_toxiproxy
  # ip netns exec execs the program: $! is toxiproxy's pid
  ip netns exec "$hub_ns" "$toxiproxy_bin" -host "$hub_ip" -port "$toxiproxy_api_port" >"$state_dir/toxiproxy.log" 2>&1 &
  echo $! >"$state_dir/toxiproxy.pid"
  deadline=$((SECONDS + 20))
  until toxi GET /version >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || die "toxiproxy did not answer within 20 s ($state_dir/toxiproxy.log)"
    sleep 0.2
  done
  for a in $(seq 1 "$n"); do
    for b in $(seq 1 "$n"); do
      [ "$a" = "$b" ] && continue
      toxi_post /proxies "{\"name\":\"link-$a-$b\",\"listen\":\"$hub_ip:$(proxy_port "$a" "$b")\",\"upstream\":\"$(node_ip "$b"):$remote_port\",\"enabled\":true}" >/dev/null
      in_ns "$(node_ns "$a")" nft add rule ip kvpslow output ip daddr "$(node_ip "$b")" tcp dport "$remote_port" \
        dnat to "$hub_ip:$(proxy_port "$a" "$b")"
    done
  done
}

slow() {
  local a="$1" b="$2" ms="$3" jitter="$4"
  check_node "$a"; check_node "$b"
  [ -f "$state_dir/toxiproxy.pid" ] || die "slow: no proxies (net.sh proxy-start N before the nodes start)"
  # upstream: the bytes the sender (A's Artery) writes to B; B's replies on this connection are TCP ACKs only
  toxi_post "/proxies/link-$a-$b/toxics" \
    "{\"name\":\"slow\",\"type\":\"latency\",\"stream\":\"upstream\",\"toxicity\":1.0,\"attributes\":{\"latency\":$ms,\"jitter\":$jitter}}" \
    >/dev/null
}

unslow() {
  local n a b
  n="$(node_count)"
  [ -f "$state_dir/toxiproxy.pid" ] || return 0
  for a in $(seq 1 "$n"); do for b in $(seq 1 "$n"); do
    [ "$a" = "$b" ] || toxi DELETE "/proxies/link-$a-$b/toxics/slow" >/dev/null 2>&1 || true
  done; done
}

proxy_stop() {
  local i pid
  if [ -f "$state_dir/toxiproxy.pid" ]; then
    pid="$(cat "$state_dir/toxiproxy.pid")"
    kill "$pid" 2>/dev/null || true
    rm -f "$state_dir/toxiproxy.pid"
  fi
  for i in $(seq 1 "$(node_count)"); do
    in_ns "$(node_ns "$i")" nft flush chain ip kvpslow output
  done
}

rules() {
  local i
  for i in $(seq 1 "$(node_count)"); do
    echo "# node $i ($(node_ip "$i"))"
    in_ns "$(node_ns "$i")" nft list table inet kvpart
  done
}

cleanup_namespaces() {
  local pid ns
  if [ -f "$state_dir/toxiproxy.pid" ]; then
    pid="$(cat "$state_dir/toxiproxy.pid")"
    kill "$pid" 2>/dev/null || true
    rm -f "$state_dir/toxiproxy.pid"
  fi
  for ns in $(ip netns list | awk '{print $1}' | grep -E '^kvp-(hub|n[1-9])$' || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -f "$state_dir/nodes"
}

addresses() {
  local i
  echo "hub $hub_ip"
  for i in $(seq 1 "$max_nodes"); do echo "node $i $(node_ip "$i")"; done
  echo "port grpc 50051"
  echo "port management 8558"
  echo "port remote $remote_port"
}

command="${1:-}"
shift || true
case "$command" in
  addresses) addresses ;;
  setup) require_root; setup "${1:?usage: net.sh setup N}" ;;
  cut) require_root; cut "${1:?}" "${2:?usage: net.sh cut A B}" ;;
  cut-oneway) require_root; cut_oneway "${1:?}" "${2:?usage: net.sh cut-oneway A B}" ;;
  isolate) require_root; a="${1:?usage: net.sh isolate A B...}"; shift; for b in "$@"; do cut "$a" "$b"; done ;;
  heal) require_root; heal ;;
  proxy-start) require_root; proxy_start "${1:?usage: net.sh proxy-start N}" ;;
  install-toxiproxy) install_toxiproxy ;;
  slow) require_root; slow "${1:?}" "${2:?}" "${3:?}" "${4:?usage: net.sh slow A B MS JITTER}" ;;
  unslow) require_root; unslow ;;
  proxy-stop) require_root; proxy_stop ;;
  rules) rules ;;
  cleanup) require_root; cleanup_namespaces ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
