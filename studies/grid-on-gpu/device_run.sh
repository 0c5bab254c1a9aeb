#!/bin/bash
# The fused grid passes on a lent GPU (issue 30, item 6), one call: CUDA init and import
# seconds, the grid tests on CUDA, ms per V-cycle (before / torch passes / fused kernels),
# then whole `fnin integrate` calls of the tree before (.devdata/head) and this one, in
# alternating fresh processes: the 24 MP folder of benchmarks/large_load.py, the 24 MP and
# 2048x1536 views of `fnin bench meshes --size`. Needs .whl/ (pyamg, OpenEXR, pypng,
# trimesh, imagecodecs for cp312) and .devdata/{meshes,head} carried (head: the tree before,
# `git archive dfad4e3`). Results under $OUT.
set -o pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv,noheader; nproc; date
python3 -c "import time; t=time.time(); import torch; t1=time.time(); torch.zeros(1, device='cuda'); torch.cuda.synchronize(); print('torch import %.2f s, cuda init %.2f s' % (t1-t, time.time()-t1), torch.__version__)"
python3 -c "import time; t=time.time(); import fnin_cli.cli; print('fnin_cli.cli import %.2f s' % (time.time()-t))"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_grid.py 2>&1 | tee $OUT/pytest.log | tail -3
timeout 90 python3 studies/grid-on-gpu/vcycle_time.py --size 6000x4000 --before .devdata/head 2>&1 | tee $OUT/vcycle.jsonl
M=.devdata/meshes
timeout 200 python3 studies/camera-size/compare_whole_call.py .devdata/head . --size 6000x4000 --pairs 2 --meshes $M --out $OUT/whole_folder24.json 2>&1 | tail -5
timeout 120 python3 studies/camera-size/compare_whole_call.py .devdata/head . --size 6000x4000 --scene bench --pairs 1 --meshes $M --out $OUT/whole_bench24.json 2>&1 | tail -3
timeout 60 python3 studies/camera-size/compare_whole_call.py .devdata/head . --size 2048x1536 --scene bench --pairs 1 --meshes $M --out $OUT/whole_bench2k.json 2>&1 | tail -3
date
