#!/usr/bin/env bash
# Installs the dependencies, configures build/ afresh (Release, Ninja), builds everything and
# runs the whole test suite: the test command README.md and CI give. Non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
# A fresh configuration: a stale cache (another LibTorch, another generator, old options)
# must not decide whether the tests pass. Object files stay, so a rerun rebuilds only changes.
rm -rf build/CMakeCache.txt build/CMakeFiles
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure --no-tests=error -j"$jobs"
# The python package's tests (tiny random models on the CPU), in the venv python-env.sh keeps.
bash scripts/python-env.sh
venv=${LORASIM_VENV:-$HOME/.cache/lorasim/venv}
LORASIM="$PWD/build/cli/lorasim" "$venv/bin/python" -m pytest -q tests/python
# `pip install .` as a Python user runs it: one wheel build of the binary without LibTorch (a few
# minutes on two cores), installed into a fresh venv, then `lorasim` and lorasim_hf run from it, and a
# tiny Trainer and SFTTrainer run on the CPU through calibrate, the callback, validate, fit and tune.
bash tests/install/pip_install_test.sh "$venv"
