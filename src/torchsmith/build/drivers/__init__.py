"""Standalone scripts the build runs with the *target* interpreter (never imported here).

``cpp_ext_parallel.py``: real parallelism for torch.utils.cpp_extension projects, including those
that turn ninja off (torch-scatter); :func:`parallel_extension_steps` gives the steps that run it.
"""

from __future__ import annotations

from pathlib import Path

from torchsmith.build.model import Step

DRIVERS = Path(__file__).parent
CPP_EXT_PARALLEL = DRIVERS / "cpp_ext_parallel.py"


def parallel_extension_steps(
    tree: str, python: str, *, jobs: int, install: bool = True, dist_dir: str = "dist"
) -> tuple[Step, ...]:
    """Build every extension of ``tree`` in parallel, package a wheel and (optionally) install it.

    The compiler launcher, if any, goes in the config's env as TORCHSMITH_LAUNCHER (plus CXX and
    CUDA_HOME where chosen): the driver puts it in front of the C++ compiler and nvcc.
    """
    argv = [python, str(CPP_EXT_PARALLEL), "--jobs", str(jobs)]
    if install:
        argv += ["--install-from", dist_dir]
    argv += ["--", "bdist_wheel", "--dist-dir", dist_dir]
    return (Step("build", tuple(argv), tree),)
