#!/usr/bin/env bash
# Times the simulator two ways and writes bench/results/simulate-speed.md:
#   1. bench_simulate: the library, in ns per split (target: under 1 us per split);
#   2. the whole process `lorasim simulate ... --format json > /dev/null`, start to exit,
#      over RUNS runs (target: under 50 ms), with hyperfine when installed, else a bash loop.
#
# usage: bench/run_simulate_bench.sh            (binaries from build/)
#        BUILD_DIR=build-cli RUNS=100 bench/run_simulate_bench.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-build}"
[[ "$build" = /* ]] || build="$root/$build"
runs="${RUNS:-50}"
lorasim="$build/cli/lorasim"
bench="$build/bench/bench_simulate"
out="$root/bench/results/simulate-speed.md"

for bin in "$lorasim" "$bench"; do
  if [[ ! -x "$bin" ]]; then
    echo "error: $bin not found: build first (cmake -S . -B ${build#$root/} -G Ninja && cmake --build ${build#$root/}), or set BUILD_DIR" >&2
    exit 2
  fi
done

args=(simulate --gpu h200 --model qwen3-1.7b --effective-batch 1024 --format json)
cmd="$lorasim ${args[*]} > /dev/null"
"$lorasim" "${args[@]}" > /dev/null  # fail early, and warm the page cache

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "timing the library (bench_simulate) ..." >&2
"$bench" > "$tmp/core.md"

echo "timing the process over $runs runs ..." >&2
if command -v hyperfine > /dev/null; then
  tool="hyperfine $(hyperfine --version | awk '{print $2}') (--warmup 5 --runs $runs -N)"
  # -N: no intermediate shell, so the figure is lorasim alone; stdout goes to /dev/null.
  hyperfine --style none --warmup 5 --runs "$runs" -N --time-unit millisecond \
    --export-markdown "$tmp/process.md" -n "lorasim ${args[*]}" "$lorasim ${args[*]}" > /dev/null
  process_table="$(cat "$tmp/process.md")"
else
  tool="bash loop with date +%s%N ($runs runs after 5 warm-up runs)"
  for _ in 1 2 3 4 5; do "$lorasim" "${args[@]}" > /dev/null; done
  : > "$tmp/ns"
  for _ in $(seq "$runs"); do
    t0=$(date +%s%N)
    "$lorasim" "${args[@]}" > /dev/null
    t1=$(date +%s%N)
    echo $((t1 - t0)) >> "$tmp/ns"
  done
  process_table="$(sort -n "$tmp/ns" | awk -v name="lorasim ${args[*]}" '
    { v[NR] = $1 / 1e6; sum += v[NR] }
    END {
      printf "| Command | Mean [ms] | Median [ms] | Min [ms] | Max [ms] |\n|:---|---:|---:|---:|---:|\n"
      printf "| `%s` | %.2f | %.2f | %.2f | %.2f |\n", name, sum / NR, v[int((NR + 1) / 2)], v[1], v[NR]
    }')"
fi

mkdir -p "$(dirname "$out")"
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
{
  echo "# Simulator speed"
  echo
  echo "Written by \`bench/run_simulate_bench.sh\`; rerun it to refresh."
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(nproc) CPUs, $cpu ($(uname -sm))"
  echo "- commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- build: $(grep -m1 '^CMAKE_BUILD_TYPE' "$build/CMakeCache.txt" 2>/dev/null | cut -d= -f2 || echo unknown)," \
       "$(grep -m1 '^CMAKE_CXX_COMPILER:' "$build/CMakeCache.txt" 2>/dev/null | cut -d= -f2 || echo unknown)"
  echo
  echo "## Whole process (target: under 50 ms)"
  echo
  echo "\`${cmd#$root/}\`, timed with $tool:"
  echo
  echo "$process_table"
  echo
  echo "## Library (target: under 1 us per split)"
  echo
  echo "\`${bench#$root/}\`: qwen3-1.7b, seq 512, h200 profile. \`sim::simulate()\` is the whole"
  echo "library call (validation, cost-model setup, every split, ranking, notes); \"cost model per"
  echo "split\" is the per-split evaluation alone once the workload's features are computed."
  echo "Median of 7 rounds of at least 1/7 s each."
  echo
  cat "$tmp/core.md"
} > "$out"
echo "wrote ${out#$root/}" >&2
cat "$out"
