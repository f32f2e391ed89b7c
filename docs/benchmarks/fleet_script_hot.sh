#!/usr/bin/env bash
# The fleet script's own cost with Redis kept hot: calls pipelined with
# `redis-cli --pipe`, no idle between them, so the figure is the script's
# work without the cold caches of calls spread over a second (which
# `examples/fleet_scale.rs` measures), as the issue's first figures were
# taken (EVALSHA driven directly). For each size, a ledger of that many
# nodes (7.6 slots a node: wants drawn 0 to 16 bind) is joined and
# renewed until twice past the end of its learning lease (the server's
# `learn_until`); then 20,000 renewals of random nodes are timed, each
# kind in turn:
#   same:  every want as it stands (the script's fixed cost: a renewal
#          that moves nothing),
#   moved: a want drawn afresh, never the one the node has (the tree, the
#          order and the share move),
#   empty: a script that returns at once (Redis's dispatch of EVALSHA
#          with the same keys and arguments).
# Prints Redis's `usec_per_call` for each (INFO commandstats). Every call
# reports holding 0 and no expiry seen (-1: the staleness check is not
# made), unlike a node's, and all go through one connection; a call that
# Redis answers with an error stops the run.
#
#   bash docs/benchmarks/fleet_script_hot.sh [ROUNDS [SIZES]]
#   bash docs/benchmarks/fleet_script_hot.sh 3 10,100,1000,10000
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
sizes=${2:-10,100,1000,10000}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
  >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
cli() { redis-cli -p "$port" "$@"; }

# calls SHA MODE COUNT SEED SAME NODES: COUNT calls of MODE by NODES
# nodes, as inline commands.
calls() {
  awk -v sha="$1" -v mode="$2" -v n="$3" -v seed="$4" -v same="$5" -v nodes="$6" 'BEGIN {
    srand(seed); t = "{sidejob:fleet:hot}"
    k = "6 " t ":meta " t ":nodes " t ":expiry " t ":held " t ":levels " t ":order"
    for (c = 0; c < n; c++) {
      i = (mode == "join") ? c : int(rand() * nodes)
      if (mode == "join" || same) {
        w = (i * 7) % 17
      } else {
        if (!(i in held)) held[i] = (i * 7) % 17
        do { w = int(rand() * 17) } while (w == held[i])
        held[i] = w
      }
      printf "EVALSHA %s %s node-%d token-%d %d 10000 1000 %d 0 %s -1 -1\r\n", sha, k, i, i, nodes * 76 / 10, w, mode
    }
  }'
}

# pipe: the calls on stdin sent with `redis-cli --pipe`; any error reply
# stops the run.
pipe() {
  local out errors
  out=$(cli --pipe)
  errors=$(printf '%s\n' "$out" | awk -F'[:,]' '/^errors:/ { print $2 + 0 }')
  if [ "${errors:-1}" != 0 ]; then
    printf '%s\n' "$out" >&2
    exit 1
  fi
}

# now: the server's clock (ms).
now() {
  cli eval "local t = redis.call('TIME') return t[1] * 1000 + math.floor(t[2] / 1000)" 0
}

usec() {
  cli info commandstats | grep '^cmdstat_evalsha:' | tr ',' '\n' \
    | awk -F= '/^usec_per_call/ { print $2 }'
}

script=$(cli script load "$(cat src/fleet/renew.lua)")
empty=$(cli script load "return {'late', 0, 0, 0, 0, 0, 0, 0, ''}")
for nodes in ${sizes//,/ }; do
  for round in $(seq "$rounds"); do
    cli flushall >/dev/null
    calls "$script" join "$nodes" 1 0 "$nodes" | pipe
    # Renewed every 1.2 s (within `alive`'s 3 s) until two renewals of
    # every node came after the learning lease ended.
    seed=2 past=0
    while [ "$past" -lt 2 ]; do
      sleep 1.2
      calls "$script" renew "$nodes" "$seed" 1 "$nodes" | pipe
      seed=$((seed + 1))
      until=$(cli hget '{sidejob:fleet:hot}:meta' learn_until)
      if [ "$(now)" -gt "$until" ]; then
        past=$((past + 1))
      fi
    done
    line="nodes $nodes, round $round:"
    for kind in same moved empty; do
      sha=$script
      [ "$kind" = empty ] && sha=$empty
      same=1
      [ "$kind" = moved ] && same=0
      calls "$sha" renew 20000 "9$round" "$same" "$nodes" >"${TMPDIR:-/tmp}/fleet_hot_calls"
      cli config resetstat >/dev/null
      pipe <"${TMPDIR:-/tmp}/fleet_hot_calls"
      line="$line $kind $(usec) us"
    done
    echo "$line"
  done
done
