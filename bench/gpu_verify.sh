#!/usr/bin/env bash
# torchsmith verify on a GPU machine: records, timings, the bf16 ratio, hang and no-GPU behaviour.
#   OUT=/dir bash bench/gpu_verify.sh [python]        (run from anywhere; default python below)
# Works on 1 GPU (nvidia-h100-x1 / nvidia-h200) and on 2+ (nvidia-h200-x2: adds peer access and
# the NCCL all-reduce). No network: torchsmith runs from this checkout (PYTHONPATH=src) with the
# target's own python, which needs torchsmith's deps (click rich packaging platformdirs); when
# they are missing it says so and still records the target script's raw results (torch only).
# Every step is independent and bounded by `timeout`; the most important ones run first.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
PY=${1:-/opt/torch/.venv/bin/python}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
SCRIPT=src/torchsmith/verify/scripts/verify_target.py
step() { echo; echo "=== $*"; }
ts() { timeout 200 "$PY" -m torchsmith "$@"; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

step "machine"
nvidia-smi -L
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv
"$PY" -c 'import sys, torch; print(sys.version); print(torch.__version__, torch.version.cuda, torch.cuda.device_count())'
TS_OK=1
if ! "$PY" -c 'import click, rich, packaging, platformdirs' 2>"$OUT/deps.txt"; then
    TS_OK=0
    echo "torchsmith's dependencies are missing in $PY: $(tail -n1 "$OUT/deps.txt")"
    echo "(needs click rich packaging platformdirs; recording the raw target script only)"
fi

if [ "$TS_OK" = 1 ]; then
    step "verify --quick --json, timed end to end (target < 10 s on the H200)"
    start=$(date +%s%N)
    ts verify --quick --json --python "$PY" > "$OUT/verify_quick.json"; rc=$?
    echo "verify --quick --json: exit $rc in $(ms_since "$start") ms"
    "$PY" - "$OUT/verify_quick.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
data = d.get("data") or {}
print("ok:", data.get("ok"), "error:", d.get("error") or data.get("error"))
for c in data.get("checks", []):
    print(f"  {str(c['passed']):5} {c['name']:32} {str(c['value'])[:28]:28} {c['duration_s']:.2f}s")
for g in data.get("gpus", []):
    print("  gpu", g["index"], g["name"], g["route"], "| bf16", g["bf16_tflops"], "/",
          g["peak_bf16_tflops"], "| copy", g["copy_gbs"], "/", g["peak_bandwidth_gbs"])
print("  versions:", data.get("versions"), "driver:", data.get("driver_version"))
print("  nccl busbw:", data.get("nccl_busbw_gbs"))
for f in data.get("findings", []):
    print("  finding:", f["severity"], f["category"], f["message"][:150])
PY
fi

step "bench: verify --quick figure vs the best 8192^3 bf16 product (same run)"
timeout 250 "$PY" bench/bench_verify.py --python "$PY" --out "$OUT" --seconds 8

if [ "$TS_OK" = 1 ]; then
    step "verify --quick (text)"
    ts verify --python "$PY" > "$OUT/verify_quick.txt" 2>&1; echo "exit $?"
    cat "$OUT/verify_quick.txt"
fi

step "raw target script, quick (the recorded-format fixture)"
start=$(date +%s%N)
timeout 200 "$PY" -B "$SCRIPT" "$OUT/state_quick.json" '{"full": false}'
echo "raw quick: exit $? in $(ms_since "$start") ms"

if [ "$TS_OK" = 1 ]; then
    step "verify --full --json"
    start=$(date +%s%N)
    ts verify --full --json --python "$PY" > "$OUT/verify_full.json"; rc=$?
    echo "verify --full --json: exit $rc in $(ms_since "$start") ms"
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])).get("data") or {}; [print(" ", c["passed"], c["name"], c["value"], c["detail"][:100]) for c in d.get("checks", [])]' "$OUT/verify_full.json"
    step "hang bounded: --full with a 4 s timeout (expect exit 1 and one line naming the check)"
    ts verify --full --timeout 4 --python "$PY" > "$OUT/verify_timeout.txt" 2>&1; echo "exit $?"
    grep -E "no answer|^error" "$OUT/verify_timeout.txt" | head -n 3
    step "no GPU visible (CUDA_VISIBLE_DEVICES=''): expect no-gpu-visible, exit 1"
    CUDA_VISIBLE_DEVICES="" ts verify --json --python "$PY" > "$OUT/verify_no_gpu.json"; echo "exit $?"
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print([(f["category"], f["message"][:120]) for f in (d.get("data") or {}).get("findings", [])])' "$OUT/verify_no_gpu.json"
fi

step "raw target script, full"
start=$(date +%s%N)
timeout 200 "$PY" -B "$SCRIPT" "$OUT/state_full.json" '{"full": true}'
echo "raw full: exit $? in $(ms_since "$start") ms"
ls -la "$OUT"
