#!/usr/bin/env bash
# One pass over everything that needs a real GPU machine: record what torchsmith prints there
# (fixtures for tests) and run the GPU-side benchmarks and cross-checks.
#   OUT=/some/dir bash bench/gpu_session.sh [python]
# Needs only the machine's own python3 with torch (and click, rich, packaging); no install.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3}
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
ts() { "$PY" -m torchsmith "$@"; }
step() { echo; echo "=== $*"; }

step "machine"; nvidia-smi -L; "$PY" -c 'import sys, torch; print(sys.version); print(torch.__version__, torch.version.cuda, torch.cuda.get_arch_list())'
step "doctor"; ts doctor --python "$(command -v "$PY")" | tee "$OUT/doctor.txt"
ts doctor --json --python "$(command -v "$PY")" > "$OUT/doctor.json"; echo "doctor --json exit $?"
step "inspect torch"; ts inspect torch --gpu 9.0 | tail -n 20
ts inspect torch --json --python "$(command -v "$PY")" > "$OUT/inspect-torch.json"; echo "inspect --json exit $?"
step "plan (live)"; ts plan | tee "$OUT/plan.txt"; ts plan --json > "$OUT/plan.json"
step "bench inspect"; "$PY" bench/bench_inspect.py --budget 0.5
step "bench doctor"; "$PY" bench/bench_doctor.py --python "$(command -v "$PY")" --runs 5
step "check gpu probe"; "$PY" bench/check_gpu_probe.py
step "check torch probe"; "$PY" bench/check_torch_probe.py --python "$(command -v "$PY")"
step "done"; ls -la "$OUT"
