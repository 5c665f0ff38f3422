"""Check the knowledge base against a real torch install (run it on a GPU machine).

    python scripts/kb_check_torch.py [PYTHON]

PYTHON is the interpreter whose torch to read (default: this one). It prints the torch version,
its arch list (torch.cuda.get_arch_list()) and what the knowledge base says for that release and
variant, and exits 1 when they differ. torch is imported only in the child interpreter.
"""

from __future__ import annotations

import platform
import sys

from torchsmith.knowledge import load_knowledge
from torchsmith.platforms import current_os
from torchsmith.util.cmd import run

CODE = (
    "import torch; print(torch.__version__); "
    "print('archs=' + ','.join(a for a in torch.cuda.get_arch_list() if a.startswith('sm_')))"
)


def main() -> int:
    python = sys.argv[1] if len(sys.argv) > 1 else sys.executable
    out = run([python, "-c", CODE], timeout=300, check=True).stdout.rstrip("\n").split("\n")
    version, archs = out[-2], out[-1].removeprefix("archs=")
    variant = version.split("+")[1] if "+" in version else "cpu"
    os_name = current_os()
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    kb = load_knowledge().variant_archs(version, variant, os_name, arch)
    real = sorted(a for a in archs.split(",") if a)
    print(f"torch {version} on {os_name}-{arch}: get_arch_list = {real}")
    if kb is None:
        print("knowledge base: no arch list for this release/variant/platform")
        return 1
    print(f"knowledge base: sass = {list(kb.sass)} ({kb.status}; {', '.join(kb.source)})")
    return 0 if sorted(kb.sass) == real else 1


if __name__ == "__main__":
    sys.exit(main())
