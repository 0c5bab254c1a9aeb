#!/bin/bash
# Lent-GPU check of what ships: the CUDA tests and the tests of the rounds, Stage II's gate and
# the process's resources; `fnin bench diligent` on cuda (default and one-shot, against the CPU's
# MADE); benchmarks/device_check.py. Run on the device machine from the repo root, with the wheels of
# pyamg, OpenEXR, pypng and trimesh in .whl/ and a copy of ../shared/data/diligent in runs/devdata/
# (both carried; ../shared does not travel). Results: benchmarks/results/*_h200*.json.
set -o pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; nproc; date
D=runs/devdata/diligent
timeout 200 python3 -m pytest -q -p no:cacheprovider -x \
  tests/test_fnin.py::test_cuda_gives_the_cpu_answer tests/test_network.py::test_cuda_training_tracks_cpu_training \
  tests/test_resources.py tests/test_sliver_gate.py tests/test_rounds.py 2>&1 | tee $OUT/pytest.log | tail -5
date
timeout 120 python3 -m fnin_cli bench diligent --data $D --device cuda --methods default,fnin,bini --refine 0 \
  --json $OUT/diligent_cuda.json 2>&1 | tail -25
date
timeout 150 python3 benchmarks/device_check.py --data $D --out $OUT/device_check.json --big synthetic-2048x1536 2>&1 | tail -30
date
