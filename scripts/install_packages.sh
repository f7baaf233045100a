#!/usr/bin/env bash
# Installs (apt-get) the Debian packages the build and the tests need, when any is missing.
# Used by scripts/setup.sh and scripts/sanitize.sh.
set -euo pipefail
packages=(cmake ninja-build g++ llvm-19-dev libfmt-dev libboost-test-dev zlib1g-dev dataset-fashion-mnist
  fortunes  # fortunes: the GPT's text corpus (issue 31, tools/train_gpt.cpp)
  libgloo-dev)  # libgloo-dev: dist/'s CPU collectives (issue 32)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
