"""Run a project's setup.py with torch's ninja backend and parallel extension builds.

Run by the TARGET interpreter in the project folder (torchsmith itself is not importable there):
    python parallel_setup.py build_ext --parallel N

For projects that turn ninja off (torch-scatter: ``BuildExtension.with_options(use_ninja=False)``)
torch.utils.cpp_extension compiles one file at a time, and its non-ninja path cannot run
setuptools' ``--parallel`` threads safely (it swaps one shared compiler between .cpp and .cu).
This wrapper, without editing the project:
  1. gives BuildExtension use_ninja=True (torch's default backend) when ninja is available;
  2. gives each build thread its own ninja build directory (torch writes build.ninja into the
     shared build/temp.* folder otherwise, and parallel threads would overwrite each other's);
  3. splits TORCHSMITH_JOBS between the threads as MAX_JOBS of each ninja run.
Objects land where setuptools expects them, so a following ``pip install --no-build-isolation .``
finds them up to date.
"""

# It runs in the target interpreter (os.path like torch's own code; print is its output).
# ruff: noqa: PTH109, PTH118
from __future__ import annotations

import os
import runpy
import sys
import threading
from typing import Any

import torch.utils.cpp_extension as ce  # type: ignore[import-not-found, unused-ignore]

_ORIG_INIT = ce.BuildExtension.__init__
_ORIG_BUILD = ce.BuildExtension.build_extensions
_ORIG_COMPILE = ce._write_ninja_file_and_compile_objects


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    if ce.is_ninja_available():
        kwargs["use_ninja"] = True
    _ORIG_INIT(self, *args, **kwargs)


def _build_extensions(self: Any) -> None:
    total = int(os.environ.get("TORCHSMITH_JOBS", "0") or 0)
    threads = self.parallel if isinstance(self.parallel, int) else 1
    threads = max(1, min(threads, len(self.extensions)))
    if total:
        os.environ["MAX_JOBS"] = str(max(1, total // threads))
    print(
        f"torchsmith: {len(self.extensions)} extensions, {threads} at a time, "
        f"ninja={'on' if self.use_ninja else 'off'}, MAX_JOBS={os.environ.get('MAX_JOBS', '?')}",
        flush=True,
    )
    _ORIG_BUILD(self)


def _compile_objects(*args: Any, **kwargs: Any) -> Any:
    if "build_directory" in kwargs:
        kwargs["build_directory"] = os.path.join(
            kwargs["build_directory"], f"ninja-{threading.current_thread().name}"
        )
    return _ORIG_COMPILE(*args, **kwargs)


ce.BuildExtension.__init__ = _init
ce.BuildExtension.build_extensions = _build_extensions
ce._write_ninja_file_and_compile_objects = _compile_objects

sys.argv = ["setup.py", *sys.argv[1:]]
sys.path.insert(0, os.getcwd())
runpy.run_path("setup.py", run_name="__main__")
