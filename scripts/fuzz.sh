#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, build-fuzz/) and runs each for a bounded
# time on a copy of its seed corpus in tests/fuzz/corpus/<target>/ (with tests/fuzz/<target>.dict
# where there is one). Prints executions and findings per target; non-zero on any crash,
# timeout, leak or out-of-memory. docs/fuzzing.md describes the targets.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(profile hf_config measurements_csv measurements_jsonl cli_values)

bash scripts/install-deps.sh
# libFuzzer's runtime ships in libclang-rt-<N>-dev alongside Debian's clang.
if ! command -v clang++ >/dev/null || ! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang libclang-rt-dev
fi

rm -rf build-fuzz/CMakeCache.txt build-fuzz/CMakeFiles
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ \
  -DLORASIM_BUILD_FUZZERS=ON -DLORASIM_WITH_TORCH=OFF \
  -DLORASIM_BUILD_TESTS=OFF -DLORASIM_BUILD_BENCH=OFF
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/#/fuzz_}"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
out=build-fuzz/runs
failed=0
summary=()
for t in "${targets[@]}"; do
  work="$out/$t"
  rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
  cp tests/fuzz/corpus/"$t"/* "$work/corpus/"
  echo "== fuzz_$t: ${seconds}s"
  # Run from the work folder: measurement rows may name a config.json by relative path.
  dict=()
  [ -f tests/fuzz/"$t".dict ] && dict=(-dict="$PWD/tests/fuzz/$t.dict")
  rc=0
  (cd "$work" && exec ../../tests/fuzz/fuzz_"$t" -max_total_time="$seconds" -timeout=5 \
     -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=artifacts/ "${dict[@]}" corpus) \
     >"$work/log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  findings=$(find "$work/artifacts" -type f | wc -l)
  if ((rc != 0 || findings != 0)); then
    failed=1
    grep -E "^==[0-9]+==ERROR|runtime error|deadly signal|timeout|out-of-memory|leak|uncaught|terminate" "$work/log" | head -5 || true
    find "$work/artifacts" -type f -printf '   artifact: %p\n'
  fi
  summary+=("$(printf '%-20s executions %-10s findings %s (exit %s)' "$t" "${execs:-?}" "$findings" "$rc")")
done

echo "== summary (${seconds}s per target; logs and artifacts in $out/)"
printf '%s\n' "${summary[@]}"
exit "$failed"
