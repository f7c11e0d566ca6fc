#!/usr/bin/env bash
# Run on the development machine (Debian 12): downloads the .deb files the GPU machine lacks
# (TOML++, Boost.Program_options, and gloo's headers, which c10d's ProcessGroupGloo needs and
# the pip LibTorch does not ship) into .deps/, which git ignores and the device tool carries.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
mkdir -p .deps
cd .deps
apt-get download libtomlplusplus-dev libtomlplusplus3 libboost-program-options1.74-dev \
  libboost-program-options1.74.0 libboost1.74-dev libgloo-dev
ls -la
