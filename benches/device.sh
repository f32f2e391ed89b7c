#!/usr/bin/env bash
# The benches on a lent many-core machine that has no Rust: the binaries are
# built here, carried there in device-bin/ (git-ignored), and run by one
# script whose logs `bash benches/report.sh --from DIR` renders.
#
#   bash benches/device.sh build          # here: build, strip, copy to device-bin/
#   bash benches/device.sh run OUT [SECS] # there: every bench, logs in OUT/
#
# `build` also copies `redis-server` and the libraries it needs beyond the C
# runtime's, for the async pool's Redis rows and the fleet's scale example.
# `run` gives the criterion benches `--warm-up-time 0.2 --measurement-time
# 0.5` (short: read ±10 %) and the matrix SECS a cell (default 0.5).
set -euo pipefail
cd "$(dirname "$0")/.."

benches=(admission object_pool tower task_supervisor async_object_pool mailbox)

case "${1:-}" in
build)
  cargo bench --all-features --no-run
  cargo build --release --features redis --example fleet_scale
  rm -rf device-bin
  mkdir -p device-bin/lib
  for bench in "${benches[@]}"; do
    # The newest binary of each bench (cargo keeps older ones beside it).
    bin=$(ls -t target/release/deps/"$bench"-* | grep -v '\.d$' | head -1)
    cp "$bin" "device-bin/$bench"
  done
  cp target/release/examples/fleet_scale device-bin/
  strip device-bin/* 2>/dev/null || true
  redis=$(readlink -f "$(command -v redis-server)")
  cp "$redis" device-bin/redis-server
  ldd "$redis" | awk '/=> \// {print $3}' | grep -Ev '/lib(c|m|pthread|dl|rt|stdc\+\+|gcc_s)\.so' \
    | xargs -r -I{} cp {} device-bin/lib/
  {
    echo "| rustc | $(rustc --version) (binaries built on the 2-vCPU machine, stripped) |"
    echo "| commit | \`$(git rev-parse --short HEAD)\`, $(date -u +%Y-%m-%d) |"
  } > device-bin/built.txt
  du -sh device-bin
  ;;
run)
  out=${2:?"run OUT: where the logs go"}
  seconds=${3:-0.5}
  mkdir -p "$out"
  export PATH="$PWD/device-bin:$PATH" LD_LIBRARY_PATH="$PWD/device-bin/lib"
  crit=(--warm-up-time 0.2 --measurement-time 0.5 --noplot)
  {
    echo "| | |"
    echo "|---|---|"
    echo "| CPU | $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs (a lent VM) |"
    echo "| kernel | $(uname -r) |"
    cat device-bin/built.txt
    echo "| criterion | \`${crit[*]}\` |"
  } > "$out/machine.txt"
  bench() { # log name, binary, then its arguments
    local name=$1 bin=$2; shift 2
    echo "device.sh: $name $(date +%T)" >&2
    "device-bin/$bin" "$@" > "$out/$name.log" 2>&1 || echo "device.sh: $name failed ($?)" >&2
  }
  export SIDEJOB_BENCH_THREADS=1,2,4,8,16
  bench admission admission --bench "${crit[@]}" \
    'admission/.*/(sidejob|sidejob-owned|sidejob-leased|atomic-cas|mutex|tokio-semaphore|async-lock-semaphore|floor)$'
  SIDEJOB_BENCH_MODE=matrix SIDEJOB_BENCH_SECONDS=$seconds bench matrix admission --bench
  SIDEJOB_BENCH_MODE=tight SIDEJOB_BENCH_THREADS=1,2,16 bench tight admission --bench
  unset SIDEJOB_BENCH_THREADS
  SIDEJOB_BENCH_MODE=shards SIDEJOB_BENCH_SECONDS=$seconds bench shards admission --bench
  export SIDEJOB_BENCH_THREADS=1,2,4,8,16
  bench object_pool object_pool --bench "${crit[@]}"
  bench tower tower --bench "${crit[@]}"
  bench task_supervisor task_supervisor --bench "${crit[@]}" 'task_supervisor/'
  bench async_object_pool async_object_pool --bench "${crit[@]}" 'async_object_pool/'
  unset SIDEJOB_BENCH_THREADS
  bench mailbox mailbox --bench "${crit[@]}" 'mailbox/(cast|call)/'
  ;;
*)
  echo "usage: bash benches/device.sh build | run OUT [SECS]" >&2
  exit 2
  ;;
esac
