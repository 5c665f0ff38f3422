"""Check doctor's no-import torch probe against what ``import torch`` itself says (GPU machines).

    python bench/check_torch_probe.py --python /path/to/venv/bin/python

torchsmith never imports torch; this check does, in a separate subprocess of the target, to
compare: version, CUDA version, cuDNN (``torch.backends.cudnn.version()``), NCCL
(``torch.cuda.nccl.version()``) and the arch list (``torch.cuda.get_arch_list()``, which must be
covered by the SASS/PTX read from the fatbins). Prints one line per field; exit 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from torchsmith.probe.python_env import probe_python_and_torch, resolve_python

TRUTH = """
import json, torch
out = {"version": torch.__version__, "cuda": torch.version.cuda, "cudnn": None, "nccl": None,
       "archs": []}
try:
    out["cudnn"] = torch.backends.cudnn.version()
except Exception as exc:
    out["cudnn_error"] = repr(exc)
try:
    v = torch.cuda.nccl.version()
    out["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
except Exception as exc:
    out["nccl_error"] = repr(exc)
try:
    out["archs"] = torch.cuda.get_arch_list()
except Exception as exc:
    out["archs_error"] = repr(exc)
print(json.dumps(out))
"""


def _cudnn_text(number: int | None) -> str | None:
    """91900 -> "9.19.0" (cuDNN 9: major*10000 + minor*100 + patch; cuDNN 8: *1000 + *100)."""
    if number is None:
        return None
    if number >= 90000:
        return f"{number // 10000}.{number % 10000 // 100}.{number % 100}"
    return f"{number // 1000}.{number % 1000 // 100}.{number % 100}"


def _same_prefix(ours: str | None, real: str | None) -> bool:
    """Equal in the parts both have: "9" (from libcudnn.so.9) matches "9.19.0"."""
    if real is None:
        return True
    if ours is None:
        return False
    mine, theirs = ours.split("."), real.split(".")
    n = min(len(mine), len(theirs), 3)
    return mine[:n] == theirs[:n]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True)
    args = parser.parse_args(argv)
    python = resolve_python(args.python)
    _, ours = probe_python_and_torch(python)
    done = subprocess.run(
        [python, "-c", TRUTH], capture_output=True, text=True, timeout=300, check=False
    )
    if done.returncode != 0 or ours is None:
        print(f"error: import torch failed or no torch found\n{done.stderr}", file=sys.stderr)
        return 1
    truth = json.loads(done.stdout.strip().splitlines()[-1])
    cudnn = _cudnn_text(truth["cudnn"])
    covered = set(ours.archs.sass + ours.archs.ptx) if ours.archs else set()
    checks = [
        ("version", ours.version, truth["version"], ours.version == truth["version"]),
        ("cuda", ours.cuda, truth["cuda"], ours.cuda == truth["cuda"]),
        ("cudnn", ours.cudnn, cudnn, _same_prefix(ours.cudnn, cudnn)),
        ("nccl", ours.nccl, truth["nccl"], truth["nccl"] is None or ours.nccl == truth["nccl"]),
        (
            "archs",
            sorted(covered),
            truth["archs"],
            all(a in covered or a.replace("sm_", "compute_") in covered for a in truth["archs"]),
        ),
    ]
    for name, mine, real, ok in checks:
        print(f"{'ok  ' if ok else 'DIFF'} {name:8} torchsmith={mine!r}  torch={real!r}")
    return 0 if all(ok for *_, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
