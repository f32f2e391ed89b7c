#!/usr/bin/env bash
# A real HTTP load test of examples/http_server.rs behind each limiter, at
# 1x, 2x, 4x and 8x its capacity in concurrent connections, with wrk.
#
#   bash benches/http_load.sh                 # 5 s per point, capacity 4, 2 ms of work
#   SECONDS_PER_POINT=10 CAPACITY=8 WORK_MS=5 bash benches/http_load.sh
#
# Installs wrk (Debian's package) and gnuplot if missing. Prints a markdown
# table (admitted throughput, admitted p50/p99, refused share, refusal p99,
# all measured by the server itself from arrival at the router to the
# response) and writes docs/img/http_overload.svg: admitted p99 and goodput
# against offered load, per limiter. The load generator runs on the same
# machine as the server and competes with it for the CPUs.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_POINT="${SECONDS_PER_POINT:-5}"
CAPACITY="${CAPACITY:-4}"
WORK_MS="${WORK_MS:-2}"
LIMITERS="${LIMITERS:-sidejob tower-concurrency tower-loadshed none}"
FACTORS="${FACTORS:-1 2 4 8}"
OUT="${OUT:-target/http_load}"

install() {
  if ! command -v "$1" >/dev/null; then
    echo "installing $2" >&2
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq "$2" >/dev/null
    else sudo apt-get update -qq && sudo apt-get install -y -qq "$2" >/dev/null; fi
  fi
}
install wrk wrk
install gnuplot gnuplot-nox

cargo build --release --features http,prometheus --example http_server >&2
server=target/release/examples/http_server
mkdir -p "$OUT" docs/img
data="$OUT/points.tsv"
printf 'limiter\tfactor\tconnections\tadmitted_per_s\tp50_ms\tp99_ms\trefused_share\trefused_p99_ms\n' >"$data"

port=3917
for limiter in $LIMITERS; do
  for factor in $FACTORS; do
    connections=$((CAPACITY * factor))
    threads=$((connections < 2 ? connections : 2))
    port=$((port + 1))
    log="$OUT/$limiter-$factor.log"
    "$server" --addr "127.0.0.1:$port" --capacity "$CAPACITY" --work-ms "$WORK_MS" \
      --limiter "$limiter" >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
      grep -q listening "$log" && break
      sleep 0.05
    done
    wrk -t "$threads" -c "$connections" -d "${SECONDS_PER_POINT}s" \
      "http://127.0.0.1:$port/work" >"$OUT/$limiter-$factor.wrk" 2>&1 || true
    kill -INT "$pid"
    wait "$pid" || true
    report=$(grep '^report:' "$log" | sed 's/^report: //')
    value() { tr ' ' '\n' <<<"$report" | grep "^$1=" | cut -d= -f2; }
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$limiter" "$factor" "$connections" \
      "$(value admitted_per_s)" "$(value admitted_p50_ms)" "$(value admitted_p99_ms)" \
      "$(value refused_share)" "$(value refused_p99_ms)" >>"$data"
    echo "$limiter ${factor}x: $report" >&2
  done
done

echo
echo "| limiter | offered (connections) | admitted/s | admitted p50 ms | admitted p99 ms | refused | refusal p99 ms |"
echo "|---|---|---|---|---|---|---|"
tail -n +2 "$data" | while IFS=$'\t' read -r limiter factor connections rate p50 p99 share rp99; do
  printf '| %s | %sx (%s) | %.0f | %.2f | %.2f | %.1f %% | %.3f |\n' \
    "$limiter" "$factor" "$connections" "$rate" "$p50" "$p99" "$(echo "$share * 100" | bc -l)" "$rp99"
done

plot() {
  local column=$1 title=$2
  local first=1
  for limiter in $LIMITERS; do
    [ $first = 1 ] || printf ', '
    first=0
    printf "'< grep \"^%s\t\" %s' using 2:%s with linespoints title '%s'" "$limiter" "$data" "$column" "$limiter"
  done
}
gnuplot <<GNUPLOT
set terminal svg size 960,420 font "sans,11"
set output "docs/img/http_overload.svg"
set multiplot layout 1,2 title "examples/http_server.rs: capacity $CAPACITY, $WORK_MS ms of CPU per request, wrk on the same 2-core machine"
set logscale x 2
set xtics (1, 2, 4, 8)
set xlabel "offered load (x capacity, in connections)"
set key top left
set ylabel "admitted p99 (ms)"
set title "latency of admitted requests"
plot $(plot 6 p99)
set ylabel "admitted requests per second"
set title "goodput"
set yrange [0:*]
plot $(plot 4 goodput)
unset multiplot
GNUPLOT
echo >&2 "wrote docs/img/http_overload.svg and $data"
