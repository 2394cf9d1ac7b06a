#!/usr/bin/env bash
# Installs every Debian 12 package tfmc needs (only the missing ones), then
# configures and builds into build/. Safe to re-run.
#   scripts/setup.sh                 # toolchain + libraries, then build
#   scripts/setup.sh --reference     # also PyTorch/NumPy/SentencePiece for
#                                    # tests/reference and training scripts
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(llvm-19-dev libmlir-19-dev mlir-19-tools libdnnl-dev libfmt-dev
          libgtest-dev nlohmann-json3-dev libsentencepiece-dev sentencepiece
          cmake ninja-build lld-14 clang-14 g++ python3)
# OpenBLAS: Debian's torch calls the generic libblas.so.3, and the reference
# BLAS behind it makes training matmuls ~20x slower.
if [[ "${1:-}" == "--reference" ]]; then
  packages+=(python3-torch python3-numpy python3-sentencepiece libopenblas0-openmp)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

exec scripts/build.sh
