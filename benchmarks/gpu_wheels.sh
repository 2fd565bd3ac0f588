#!/usr/bin/env bash
# Prepares benchmarks/gpu.py for the lent H200 (no network there; its image has Python 3.12 with
# torch, transformers, numpy, pillow, pyyaml and tqdm, but not PyAV, which tempcore's decoder and
# the benchmark's video writer need). Run here, in the repository's root:
#
#     bash benchmarks/gpu_wheels.sh
#
# It downloads PyAV's wheel for CPython 3.12 on x86-64 into .whl/ (ignored by git, about 36 MB; the
# working tree that travels may hold 64 MiB) and prints the one command to run there, with
# carry [".whl"] and a timeout of 600 s (the script takes about 5 minutes on an H200 and writes its
# JSON after each section, so a run cut short still returns what it measured).
set -euo pipefail
cd "$(dirname "$0")/.."
AV_VERSION="${AV_VERSION:-18.1.0}"
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3
rm -rf .whl && mkdir -p .whl
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl "av==${AV_VERSION}"
ls -l .whl
cat <<'EOF'

command for the device (carry: [".whl"], timeout_s: 600):
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:src PYTHONUNBUFFERED=1 && python3 benchmarks/gpu.py --out $OUT/gpu.json
EOF
