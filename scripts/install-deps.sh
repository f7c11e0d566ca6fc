#!/usr/bin/env bash
# Installs lorasim's build dependencies from Debian 12 packages. Idempotent: packages
# already present are not fetched again, so CI and fresh machines can call it every time.
set -euo pipefail
pkgs=(build-essential cmake ninja-build libtorch-dev libtomlplusplus-dev libeigen3-dev
      libboost-program-options-dev libgtest-dev nlohmann-json3-dev
      libgloo-dev  # c10d's ProcessGroupGloo header needs gloo's headers (calibrate/process_group.cpp)
      librsvg2-bin libpng-dev)  # the --plot test renders the SVG (rsvg-convert) and decodes the PNG
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
