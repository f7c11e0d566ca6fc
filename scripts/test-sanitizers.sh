#!/usr/bin/env bash
# Builds every target that does not link LibTorch with AddressSanitizer + UndefinedBehavior-
# Sanitizer (gcc, build-asan/) and runs the test suite there. CI runs it after scripts/test.sh.
# Any sanitizer report aborts the test that hit it, so ctest fails. Non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
# halt_on_error + abort: a report is a failed test, never a line lost in the log.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
rm -rf build-asan/CMakeCache.txt build-asan/CMakeFiles
# No install rules: the install test links an unsanitized consumer against the installed
# libraries, which cannot link sanitized objects; scripts/test.sh covers it.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLORASIM_WITH_TORCH=OFF -DLORASIM_SANITIZE=ON -DLORASIM_INSTALL=OFF
cmake --build build-asan -j"$jobs"
ctest --test-dir build-asan --output-on-failure --no-tests=error -j"$jobs"
