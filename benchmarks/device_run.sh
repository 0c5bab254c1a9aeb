#!/usr/bin/env bash
# What runs on the lent GPU machine (the `device` tool), from the repo root there.
#   bash benchmarks/device_run.sh check   # env, CUDA solver/timing check, training probe, tests
#   bash benchmarks/device_run.sh train MINUTES CONFIG...   # concurrent GPU training runs (workers: the configs';
#       TRAIN_DEVICE=cpu for a local dry run); each run folder comes back as NAME.tar
#   bash benchmarks/device_run.sh compare SEED_OFFSET WEIGHTS...  # compare_models on the machine's CPU cores:
#       24 fresh scenes per layout at 512 px, one process per (weights, layout, half); and
#       edge_temperature.py's weight floors 0 / 0.003 / 0.01 / 0.03 on the same scenes
#   bash benchmarks/device_run.sh decide SEED_OFFSET SHIPPED CANDIDATE  # compare both, apply the
#       pre-registered rules (edge-net candidate: 2d20981; weight floor: its commit) to pick
#       the weights and floor, then device_check.py with them
# Needs the carried folders .whl (wheels of pyamg, pypng, plyfile, trimesh, OpenEXR, which
# that image lacks) and .devdata/diligent (a copy of ../shared/data/diligent).
# Results land in $OUT (at most 8 files come back).
set -u
mode=$1; shift
export PYTHONUNBUFFERED=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
[ -n "${SKIP_WHEELS:-}" ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || { echo "wheel install failed"; exit 3; }
export PYTHONPATH=/tmp/site:$PWD
# model cards record the commit; this copy's .git may be stale, so take it from the file
# written before the call: git rev-parse HEAD > .device_commit (git-ignored: name it in
# the run's carry list with .whl and .devdata)
[ -f .device_commit ] && export FNIN_COMMIT=$(cat .device_commit)
mkdir -p ../shared && ln -sfn "$PWD/.devdata" ../shared/data
fnin="python3 -m fnin_cli.cli"   # the console script is not installed there; `timeout` needs a command
log=$OUT/log.txt

if [ "$mode" = check ]; then
  {
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c "import torch, pyamg; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
    nproc
  } 2>&1 | tee -a "$log"
  echo "== device_check" | tee -a "$log"
  timeout 150 python3 benchmarks/device_check.py --data .devdata/diligent --out "$OUT/device_check.json" 2>&1 | tee -a "$log"
  echo "== training probe: one run, then three at once (batch 32, 4 scene workers each)" | tee -a "$log"
  timeout 60 $fnin train --config fnin_cli/weights/train_config.json --device cuda --workers 4 --batch 32 \
    --steps 40 --run-dir /tmp/probe1 --json 2>&1 | tail -2 | tee -a "$log"
  for r in a b c; do
    timeout 90 $fnin train --config fnin_cli/weights/train_config.json --device cuda --workers 4 --batch 32 \
      --steps 40 --run-dir /tmp/probe3$r --json > /tmp/probe3$r.txt 2>&1 &
  done
  wait
  tail -n 2 /tmp/probe3?.txt | tee -a "$log"
  echo "== tests (CUDA available: device auto resolves to the GPU)" | tee -a "$log"
  CI=1 timeout 120 python3 -m pytest -q -x -n 8 -p no:cacheprovider tests 2>&1 | tail -25 | tee -a "$log"
  exit 0
fi

if [ "$mode" = train ]; then
  minutes=$1; shift
  mkdir -p runs; i=0
  for cfg in "$@"; do
    name=$(basename "$cfg" .json)
    $fnin train --config "$cfg" --device "${TRAIN_DEVICE:-cuda}" --run-dir "runs/$name" \
      --out "runs/$name/out/fnin.safetensors" --max-minutes "$minutes" --json > "runs/$name.log" 2>&1 &
    i=$((i + 1))
  done
  wait
  for cfg in "$@"; do
    name=$(basename "$cfg" .json)
    tail -n 3 "runs/$name.log" | tee -a "$log"
    # the whole run folder (weights, card, log, checkpoints): small, and resumable here
    tar -C runs -cf "$OUT/$name.tar" "$name"
  done
  exit 0
fi
decide=0
if [ "$mode" = decide ]; then   # decide SEED_OFFSET SHIPPED CANDIDATE
  decide=1; mode=compare
fi

if [ "$mode" = compare ]; then
  offset=$1; shift
  # CMP_SCENES / CMP_RES / DC_ARGS: a small local dry run of this mode
  n=${CMP_SCENES:-12}; res=${CMP_RES:-512}
  rm -rf /tmp/cmp /tmp/floor; mkdir -p /tmp/cmp /tmp/floor; i=0
  for w in "$@"; do
    for layout in independent stacked fold; do
      for half in 0 $n; do
        python3 benchmarks/compare_models.py "$w" --scenes $n --res $res --layouts $layout \
          --seed-offset $((offset + half)) --json /tmp/cmp/$i.json > /tmp/cmp/$i.log 2>&1 &
        python3 benchmarks/edge_temperature.py --weights "$w" --scenes $n --res $res --layouts $layout \
          --factors 2 --floors 0,0.003,0.01,0.03 --seed-offset $((offset + half)) \
          --json /tmp/floor/$(basename $(dirname "$w"))_${layout}_$half.json > /tmp/floor/$i.log 2>&1 &
        i=$((i + 1))
      done
    done
  done
  wait
  # average the halves (and layouts' processes) per weights file: compare_models.py's JSON
  # is {weights: {layout: {...}}}, edge_temperature.py's {"args": {"weights"}, "results": {layout: {...}}}
  merge() {
    python3 - "$@" <<'PY' | tee -a "$log"
import json, sys
from collections import defaultdict
acc = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
for f in sys.argv[2:]:
    d = json.load(open(f))
    per_weights = {d["args"]["weights"]: d["results"]} if "results" in d else d
    for w, res in per_weights.items():
        for layout, v in res.items():
            if isinstance(v, dict) and layout != "mean":
                for k, x in v.items():
                    acc[w][layout][k].append(x)
out = {w: {l: {k: sum(x) / len(x) for k, x in d.items()} for l, d in ls.items()} for w, ls in acc.items()}
json.dump(out, open(sys.argv[1], "w"), indent=1)
print(json.dumps(out, indent=1))
PY
  }
  merge "$OUT/compare.json" /tmp/cmp/*.json
  merge "$OUT/floors.json" /tmp/floor/*.json
  tail -n 3 /tmp/cmp/*.log /tmp/floor/*.log >> "$log"
  if [ $decide = 1 ]; then
    python3 - "$OUT" "$1" "$2" <<'PY' | tee -a "$log"
import json, sys
out, shipped, cand = sys.argv[1:]
c = json.load(open(f"{out}/compare.json"))
fl = json.load(open(f"{out}/floors.json"))
def parts(r, k):
    return r["fold"][k], (r["independent"][k] + r["stacked"][k]) / 2
sf, si = parts(c[shipped], "fnin")
cf, ci = parts(c[cand], "fnin")
ok = cf <= 0.97 * sf and ci <= 1.02 * si
chosen = cand if ok else shipped
f0, i0 = parts(fl[chosen], "2.0/0.0")
best, floor = None, 0.0
for key in fl[chosen]["fold"]:
    f, i = parts(fl[chosen], key)
    if f <= 0.97 * f0 and i <= 1.02 * i0 and (best is None or f < best):
        best, floor = f, float(key.split("/")[1])
d = {"shipped": [sf, si], "candidate": [cf, ci], "candidate_ships": ok, "weights": chosen,
     "floor_base": [f0, i0], "floor": floor}
json.dump(d, open(f"{out}/decision.json", "w"), indent=1)
print(json.dumps(d))
PY
    w=$(python3 -c "import json; print(json.load(open('$OUT/decision.json'))['weights'])")
    f=$(python3 -c "import json; print(json.load(open('$OUT/decision.json'))['floor'])")
    echo "== device_check with $w, floor $f" | tee -a "$log"
    timeout 300 python3 benchmarks/device_check.py --data .devdata/diligent --weights "$w" --floor "$f" ${DC_ARGS:-} \
      --out "$OUT/device_check.json" 2>&1 | tee -a "$log"
  fi
  exit 0
fi
echo "unknown mode $mode"; exit 2
