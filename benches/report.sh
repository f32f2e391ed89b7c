#!/usr/bin/env bash
# Regenerates the results page (docs/benchmarks.md): its tables, between
# `<!-- report:NAME -->` markers, and its charts, docs/img/scaling.svg and
# docs/img/overload.svg, from one fresh run of the benches and examples, so
# the figures and the charts cannot drift apart.
#
#   bash benches/report.sh             # threads 1,2,4,8,16 (or SIDEJOB_BENCH_THREADS)
#   bash benches/report.sh --quick     # a 2-core machine: threads 1,2, short runs
#   bash benches/report.sh --from DIR  # render logs taken elsewhere (DIR/*.log and
#                                      # DIR/machine.txt), e.g. on a lent machine
#
# The console output of each run is kept in target/report/<bench>.log; the
# renderer is benches/report/main.rs. Run it with nothing else running.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
from=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=true ;;
    --from) from="$2"; shift ;;
    *) echo "report.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [ -z "$from" ]; then
  out=target/report
  rm -rf "$out"
  mkdir -p "$out"
  if $quick; then
    threads=${SIDEJOB_BENCH_THREADS:-1,2}
    crit=(--warm-up-time 0.2 --measurement-time 0.5 --noplot)
    seconds=0.3
  else
    threads=${SIDEJOB_BENCH_THREADS:-1,2,4,8,16}
    crit=(--warm-up-time 0.5 --measurement-time 2 --noplot)
    seconds=1
  fi
  {
    echo "| | |"
    echo "|---|---|"
    echo "| CPU | $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs |"
    echo "| rustc | $(rustc --version) |"
    echo "| commit | \`$(git rev-parse --short HEAD)\`, $(date -u +%Y-%m-%d) |"
    echo "| criterion | \`${crit[*]}\` |"
  } > "$out/machine.txt"
  bench() { # name, then the bench's arguments
    local name=$1; shift
    echo "report.sh: $name" >&2
    cargo bench --all-features "$@" > "$out/$name.log" 2>&1
  }
  export SIDEJOB_BENCH_THREADS=$threads
  bench admission --bench admission -- "${crit[@]}" \
    'admission/.*/(sidejob|sidejob-owned|sidejob-leased|atomic-cas|mutex|tokio-semaphore|async-lock-semaphore|floor)$'
  SIDEJOB_BENCH_MODE=matrix SIDEJOB_BENCH_SECONDS=$seconds bench matrix --bench admission
  bench object_pool --bench object_pool -- "${crit[@]}"
  bench tower --bench tower -- "${crit[@]}"
  bench task_supervisor --bench task_supervisor -- "${crit[@]}" 'task_supervisor/'
  bench async_object_pool --bench async_object_pool -- "${crit[@]}" 'async_object_pool/'
  unset SIDEJOB_BENCH_THREADS
  bench mailbox --bench mailbox -- "${crit[@]}" 'mailbox/(cast|call)/'
  echo "report.sh: examples" >&2
  cargo run --quiet --release --all-features --example adaptive -- --svg docs/img/adaptive.svg > "$out/adaptive.log" 2> "$out/adaptive.err"
  cargo run --quiet --release --all-features --example fleet > "$out/fleet.log" 2> "$out/fleet.err"
  from=$out
fi

cargo bench --all-features --bench report -- --input "$from" --page docs/benchmarks.md --img docs/img
