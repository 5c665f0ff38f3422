#!/usr/bin/env bash
# Provoke real runtime failures on a GPU machine and record their logs (for explain's corpus),
# then run `torchsmith explain` on each.   OUT=/dir bash bench/gpu_record_logs.sh [python]
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3}
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
record() {  # record NAME COMMAND...: run it, keep stdout+stderr verbatim (ONLY=NAME: just that)
    local name=$1; shift
    [ -n "${ONLY:-}" ] && [ "$ONLY" != "$name" ] && return
    echo "=== $name: $*"
    "$@" > "$OUT/$name.log" 2>&1
    echo "exit $?"
    "$PY" -m torchsmith explain "$OUT/$name.log" | head -n 6
}
record gpu-oom "$PY" -c "import torch; x = torch.empty(400 * 2**30, dtype=torch.uint8, device='cuda')"
record no-gpu-visible env CUDA_VISIBLE_DEVICES= "$PY" -c "import torch; print(torch.cuda.is_available()); torch.zeros(1, device='cuda')"
record nccl-without-gpu env CUDA_VISIBLE_DEVICES= MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 "$PY" -c "import torch, torch.distributed as dist; dist.init_process_group('nccl', rank=0, world_size=1); dist.all_reduce(torch.ones(1))"
# A kernel built only for sm_120, launched on this (sm_90) GPU, through torch's cpp_extension.
mkdir -p /tmp/ts-noimg && cat > /tmp/ts-noimg/k.cu <<'CU'
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>
__global__ void fill(float* p) { p[threadIdx.x] = 1.0f; }
torch::Tensor run(torch::Tensor t) {
    fill<<<1, t.numel()>>>(t.data_ptr<float>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return t;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
CU
record no-kernel-image env TORCH_CUDA_ARCH_LIST=12.0 "$PY" -c "
import torch
from torch.utils.cpp_extension import load
ext = load('ts_noimg', ['/tmp/ts-noimg/k.cu'], build_directory='/tmp/ts-noimg', verbose=True)
print(ext.run(torch.zeros(32, device='cuda')))"
ls -la "$OUT"
