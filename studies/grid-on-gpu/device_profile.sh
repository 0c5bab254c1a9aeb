#!/bin/bash
# Where the seconds of a 24 MP `fnin integrate --device auto` call go on a lent GPU:
# studies/grid-on-gpu/profile_call.py under CUDA_LAUNCH_BLOCKING=1 on the 24 MP folder of
# benchmarks/large_load.py, and ms per V-cycle (vcycle_time.py). Needs .whl/ and .devdata/ carried.
set -o pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from pathlib import Path; from large_load import render_case; print('pixels', render_case(Path('/tmp/f24'), 4000, 6000, '.devdata/meshes'))"
timeout 60 python3 studies/grid-on-gpu/vcycle_time.py --size 6000x4000 --before .devdata/head 2>&1 | tee $OUT/vcycle.jsonl
CUDA_LAUNCH_BLOCKING=1 timeout 200 python3 studies/grid-on-gpu/profile_call.py /tmp/f24 --out $OUT/call24.prof --top 90 > $OUT/call24.json 2> $OUT/profile.txt
grep -E "call|seconds" $OUT/profile.txt | head -3
python3 -c "import json; [print(json.loads(l)['seconds']) for l in open('$OUT/call24.json') if l.startswith('{')]"
python3 -c "
import pstats, io
s = io.StringIO(); pstats.Stats('$OUT/call24.prof', stream=s).sort_stats('cumulative').print_stats(75)
for line in s.getvalue().splitlines():
    if 'importlib' in line or 'typer' in line or 'click' in line or not line.strip(): continue
    print(line[:20] + line[38:150])
"
