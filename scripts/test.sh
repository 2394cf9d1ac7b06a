#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (GoogleTest suites
# and the lit suite) under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-2}"
