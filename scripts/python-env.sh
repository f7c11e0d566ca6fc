#!/usr/bin/env bash
# Creates, or reuses, the Python environment of the python/ package (lorasim_hf) and its tests:
# a venv at ${LORASIM_VENV:-$HOME/.cache/lorasim/venv} with the pinned torch, transformers, peft,
# accelerate, datasets (the lengths helper reads Parquet and Arrow through it; 5.x failed with recent
# pyarrow), trl (SFTTrainer, which the tuner's tests tune), lightning and pytorch-lightning (the
# Lightning callbacks), pytest and scikit-build-core (the build
# backend of the root pyproject.toml, so that tests/install/pip_install_test.sh builds the wheel
# without downloading it), and python/ installed in editable mode. PyPI's torch is a CUDA build of
# several GB (it also runs on the CPU), so the venv and pip's cache (~/.cache/pip) stay where the
# next run finds them; when the stamp of the pins and the checkout matches, this returns at once.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${LORASIM_VENV:-$HOME/.cache/lorasim/venv}
pins=(torch==2.11.0 transformers==5.17.0 peft==0.21.2 accelerate==1.15.0 datasets==4.8.5 trl==1.16.0 pytest==8.3.3
      lightning==2.6.6 pytorch-lightning==2.6.6  # lorasim_hf.lightning, tested under both package names
      scikit-build-core==1.1.2)  # the build backend of pyproject.toml (tests/install/pip_install_test.sh)
stamp="$venv/.lorasim-stamp"
want="${pins[*]} $(pwd)/python $(cksum < python/pyproject.toml)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" 2>/dev/null || {
    echo "error: python3 cannot create a venv at $venv (on Debian: apt-get install python3-venv)" >&2
    exit 1
  }
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
"${pip[@]}" install "${pins[@]}"
"${pip[@]}" install --no-deps -e python
echo "$want" > "$stamp"
