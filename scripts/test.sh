#!/usr/bin/env bash
# Installs what is missing (with the PyTorch reference packages), builds,
# and runs every test (GoogleTest suites, the lit suite, the importer's
# pytest suite) under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
# --reference: the importer's tests (tools/tfmc-import-pytorch) need
# PyTorch and pytest.
scripts/setup.sh --reference
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-2}"
