#!/usr/bin/env bash
# `pip install .` as a Python user runs it, end to end (scripts/test.sh runs this after the suites).
# scikit-build-core builds the wheel from the repository root with the project's CMake once, in
# the project venv (scripts/python-env.sh pins scikit-build-core there, so --no-build-isolation
# needs no download); a fresh venv then installs that wheel with --no-index. Afterwards `lorasim`
# must be on the venv's PATH, lorasim_hf.recommend.find_lorasim() must find it with no $LORASIM
# and the venv not on PATH, and a recommendation must run through it; then a tiny Trainer and
# SFTTrainer run on the CPU through calibrate, the callback, validate, fit and tune (step 6).
# Usage: tests/install/pip_install_test.sh [PROJECT_VENV]  (default ${LORASIM_VENV:-~/.cache/lorasim/venv})
# ccache, when installed, compiles through CMAKE_CXX_COMPILER_LAUNCHER (CMake reads it from the
# environment); the build directory build/pip/ is kept, so a rerun rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
venv=${1:-${LORASIM_VENV:-$HOME/.cache/lorasim/venv}}
fail() { echo "pip_install_test: FAIL: $*" >&2; exit 1; }
[ -x "$venv/bin/python" ] || fail "no project venv at $venv (run scripts/python-env.sh)"

work=$(mktemp -d "${TMPDIR:-/tmp}/lorasim-pip.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 1. The root pyproject.toml and python/pyproject.toml describe one distribution (the root's
#    version is read from CMakeLists.txt), and the scikit-build-core pin is python-env.sh's.
"$venv/bin/python" - <<'EOF' || fail "the two pyproject.toml files or the scikit-build-core pins disagree"
import re, sys, tomllib
root = tomllib.load(open("pyproject.toml", "rb"))
pkg = tomllib.load(open("python/pyproject.toml", "rb"))
for key in ("name", "dependencies", "optional-dependencies", "requires-python"):
    if root["project"].get(key) != pkg["project"].get(key):
        sys.exit(f"project.{key}: {root['project'].get(key)!r} (root) vs {pkg['project'].get(key)!r} (python/)")
cmake = re.search(r"project\(lorasim VERSION ([0-9.]+)", open("CMakeLists.txt").read()).group(1)
if pkg["project"]["version"] != cmake:
    sys.exit(f"python/pyproject.toml has version {pkg['project']['version']}, CMakeLists.txt {cmake}")
pins = re.findall(r"scikit-build-core==[0-9.]+", open("scripts/python-env.sh").read())
if pins != root["build-system"]["requires"]:
    sys.exit(f"scripts/python-env.sh pins {pins}, pyproject.toml requires {root['build-system']['requires']}")
EOF
version=$(sed -n 's/^project(lorasim VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || fail "no project(lorasim VERSION ...) in CMakeLists.txt"

# 2. The wheel, as `pip install .` builds it.
if [ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ] && command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
start=$SECONDS
if ! "$venv/bin/python" -m pip --disable-pip-version-check wheel -v --no-build-isolation --no-deps \
     --no-index -w "$work/wheels" . > "$work/build.log" 2>&1; then
  tail -n 60 "$work/build.log" >&2
  fail "pip wheel . failed (the log's tail above)"
fi
wheels=("$work"/wheels/lorasim_hf-"$version"-py3-none-*.whl)
[ -f "${wheels[0]}" ] && [ ${#wheels[@]} -eq 1 ] || fail "expected one lorasim_hf-$version-py3-none-*.whl: $(ls "$work/wheels")"
wheel=${wheels[0]}
echo "pip_install_test: built $(basename "$wheel") in $((SECONDS - start)) s"

# 3. The wheel holds the binary as a script, the package, and nothing of the C++ package.
"$venv/bin/python" - "$wheel" <<'EOF' || fail "the wheel's contents are wrong"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
scripts = sorted(n.split("/scripts/", 1)[1] for n in names if ".data/scripts/" in n)
if scripts != ["lorasim"]:
    sys.exit(f"scripts in the wheel: {scripts}, expected ['lorasim'] (a build without LibTorch)")
for need in ("lorasim_hf/__init__.py", "lorasim_hf/recommend.py", "lorasim_hf/probe.py"):
    if need not in names:
        sys.exit(f"{need} is not in the wheel")
extra = [n for n in names if n.endswith((".a", ".h", ".cmake")) or "/include/" in n]
if extra:
    sys.exit(f"C++ package files in the wheel: {extra[:5]}")
EOF

# 4. What pip shows when a system library is missing (Boost hidden; the configure stops, so
#    this costs seconds): the command that installs it, on a line of its own.
if "$venv/bin/python" -m pip --disable-pip-version-check wheel --no-build-isolation --no-deps --no-index \
     -w "$work/no-wheels" -C build-dir="$work/no-boost" -C cmake.define.CMAKE_DISABLE_FIND_PACKAGE_Boost=ON \
     . > "$work/no-boost.log" 2>&1; then
  fail "pip wheel . succeeded with Boost hidden"
fi
grep -Eq '^[ |]* apt-get install libboost-program-options-dev$' "$work/no-boost.log" \
  || { cat "$work/no-boost.log" >&2; fail "pip's error for a missing Boost does not give its apt-get line"; }

# 5. A fresh venv, offline, as a user's.
"$venv/bin/python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip --disable-pip-version-check install -q --no-index --no-deps "$wheel"

# Nothing of this checkout or of the caller's environment: no $LORASIM, only the system PATH.
clean=(env -u LORASIM -u PYTHONPATH -u VIRTUAL_ENV PATH=/usr/bin:/bin)
cd "$work"  # so that `python -c` cannot import lorasim_hf from the checkout
out=$("${clean[@]}" "$work/venv/bin/lorasim" --version) || fail "the installed lorasim --version failed"
[[ $out == "lorasim $version"* ]] || fail "lorasim --version printed: $out"
echo "pip_install_test: $(head -n 1 <<< "$out")"
[[ $out == *"calibrate runs the hf-peft stack"* ]] || fail "lorasim --version without lorasim-train printed: $out"
# No lorasim-train here: calibrate is the hf-peft stack's, and says so (issue 29).
cal=$("${clean[@]}" "$work/venv/bin/lorasim" calibrate --help 2>&1) || fail "lorasim calibrate --help failed: $cal"
[[ $cal == *"usage: lorasim calibrate --stack hf-peft"* ]] || fail "lorasim calibrate --help printed: $cal"

on_path=$("${clean[@]}" bash -c 'source "$1/bin/activate" && command -v lorasim && lorasim --version' _ "$work/venv") \
  || fail "lorasim is not on the activated venv's PATH: $on_path"
[ "$(head -n 1 <<< "$on_path")" = "$work/venv/bin/lorasim" ] || fail "lorasim on the venv's PATH is $on_path"

found=$("${clean[@]}" "$work/venv/bin/python" -c \
  "import lorasim_hf, lorasim_hf.recommend as r; print(lorasim_hf.__file__); print(r.find_lorasim())") \
  || fail "find_lorasim() failed in the venv: $found"
[[ $(head -n 1 <<< "$found") == "$work/venv/"* ]] || fail "lorasim_hf imported from $(head -n 1 <<< "$found")"
[ "$(tail -n 1 <<< "$found")" = "$work/venv/bin/lorasim" ] || fail "find_lorasim() gave $(tail -n 1 <<< "$found")"

split=$("${clean[@]}" "$work/venv/bin/python" -c "from lorasim_hf import training_arguments
print(sorted(training_arguments(model='qwen3-1.7b', effective_batch=16, seq_len=512, gpu='h200').items()))") \
  || fail "training_arguments() failed in the venv: $split"
[ "$split" = "[('bf16', True), ('fp16', False), ('gradient_accumulation_steps', 1), ('gradient_checkpointing', False), ('per_device_train_batch_size', 16)]" ] \
  || fail "training_arguments() gave $split"
echo "pip_install_test: OK (lorasim on the venv's PATH, found by find_lorasim(), recommends 16x1)"

# 6. A Python user's path on the CPU (issue 29), through the installed binary and the installed
#    package: the project venv's Python (the fresh venv has no torch) imports lorasim_hf from the
#    wheel (a directory holding only the installed package, first on PYTHONPATH, so neither the
#    checkout nor the project venv's editable install is read; LORASIM_PYTHONPATH gives calibrate's
#    probe the same one), with $LORASIM the installed lorasim. It calibrates a CPU profile, times a
#    tiny Trainer and SFTTrainer with LorasimCallback, validates and fits those rows, and tunes both.
#    Offline: the models and data are random and built in the script.
pkg="$work/wheel-package"
mkdir "$pkg"
ln -s "$(dirname "$(head -n 1 <<< "$found")")" "$pkg/lorasim_hf"
mkdir "$work/user"
start=$SECONDS
"${clean[@]}" LORASIM="$work/venv/bin/lorasim" PYTHONPATH="$pkg" LORASIM_PYTHONPATH="$pkg" OMP_NUM_THREADS=1 \
  HF_HUB_OFFLINE=1 LORASIM_CACHE_DIR="$work/user/cache" \
  "$venv/bin/python" "$root/tests/install/pip_user_path.py" --work "$work/user" --package-dir "$pkg" \
  > "$work/user.log" 2>&1 || { tail -n 40 "$work/user.log" >&2; fail "the CPU user path failed (the log's tail above)"; }
grep '^pip_user_path: ' "$work/user.log"
echo "pip_install_test: the CPU user path took $((SECONDS - start)) s"
cd "$root"
