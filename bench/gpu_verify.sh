#!/usr/bin/env bash
# torchsmith verify on a GPU machine: records, timings, the bf16 ratio, hang and no-GPU behaviour.
#   OUT=/dir bash bench/gpu_verify.sh [python]        (run from anywhere; default python below)
# Works on 1 GPU (nvidia-h100-x1 / nvidia-h200) and on 2+ (nvidia-h200-x2: adds peer access and
# the NCCL all-reduce). No network: torchsmith runs from this checkout (PYTHONPATH=src) with the
# target's own python, which needs torchsmith's deps (click rich packaging platformdirs); when
# they are missing it says so and still records the target script's raw results (torch only).
# Every step is independent and bounded by `timeout`; the script never stops early.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
PY=${1:-/opt/torch/.venv/bin/python}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
SCRIPT=src/torchsmith/verify/scripts/verify_target.py
step() { echo; echo "=== $*"; }
ts() { timeout 400 "$PY" -m torchsmith "$@"; }

step "machine"
nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv
"$PY" -c 'import sys, torch; print(sys.version); print(torch.__version__, torch.version.cuda, torch.cuda.device_count())'
TS_OK=1
if ! "$PY" -c 'import click, rich, packaging, platformdirs' 2>"$OUT/deps.txt"; then
    TS_OK=0
    echo "torchsmith's dependencies are missing in $PY: $(tail -n1 "$OUT/deps.txt")"
    echo "(needs click rich packaging platformdirs; recording the raw target script only)"
fi

step "raw target script (the recorded-format fixtures)"
for mode in quick full; do
    full=false; [ "$mode" = full ] && full=true
    start=$(date +%s%N)
    timeout 400 "$PY" -B "$SCRIPT" "$OUT/state_$mode.json" "{\"full\": $full}"
    echo "raw $mode: exit $? in $(( ($(date +%s%N) - start) / 1000000 )) ms"
done

if [ "$TS_OK" = 1 ]; then
    step "verify --quick (text)"
    ts verify --python "$PY" | tee "$OUT/verify_quick.txt"; echo "exit ${PIPESTATUS[0]}"
    step "verify --quick --json, timed end to end"
    start=$(date +%s%N)
    ts verify --quick --json --python "$PY" > "$OUT/verify_quick.json"; rc=$?
    echo "verify --quick --json: exit $rc in $(( ($(date +%s%N) - start) / 1000000 )) ms (target < 10 s)"
    step "verify --full --json"
    start=$(date +%s%N)
    ts verify --full --json --python "$PY" > "$OUT/verify_full.json"; rc=$?
    echo "verify --full --json: exit $rc in $(( ($(date +%s%N) - start) / 1000000 )) ms"
    ts verify --full --python "$PY" > "$OUT/verify_full.txt" 2>&1; tail -n 30 "$OUT/verify_full.txt"
    step "hang bounded: --full with a 4 s timeout (expect exit 1 and one line naming the check)"
    ts verify --full --timeout 4 --python "$PY" > "$OUT/verify_timeout.txt" 2>&1; echo "exit $?"
    grep -E "no answer|error" "$OUT/verify_timeout.txt" | head -n 3
    step "no GPU visible (CUDA_VISIBLE_DEVICES=): expect no-gpu-visible, exit 1"
    CUDA_VISIBLE_DEVICES="" ts verify --json --python "$PY" > "$OUT/verify_no_gpu.json"; echo "exit $?"
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print([f["category"] for f in d.get("data",{}).get("findings",[])])' "$OUT/verify_no_gpu.json"
    step "summary of --quick --json"
    "$PY" - "$OUT/verify_quick.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
data = d.get("data") or {}
print("ok:", data.get("ok"), "error:", d.get("error"))
for c in data.get("checks", []):
    print(f"  {str(c['passed']):5} {c['name']:32} {c['value']!s:28} {c['duration_s']:.2f}s")
for g in data.get("gpus", []):
    print("  gpu", g["index"], g["name"], g["route"], "bf16", g["bf16_tflops"], "/", g["peak_bf16_tflops"],
          "copy", g["copy_gbs"], "/", g["peak_bandwidth_gbs"])
print("  versions:", data.get("versions"), "driver:", data.get("driver_version"))
print("  nccl busbw:", data.get("nccl_busbw_gbs"))
for f in data.get("findings", []):
    print("  finding:", f["severity"], f["category"], f["message"][:150])
PY
fi

step "bench: verify --quick figure vs the best 8192^3 bf16 product"
timeout 500 "$PY" bench/bench_verify.py --python "$PY" --out "$OUT" --seconds 8
ls -la "$OUT"
