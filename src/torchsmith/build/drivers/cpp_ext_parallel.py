"""Build a torch.utils.cpp_extension project's extensions in parallel, even where its setup.py
turns ninja off (torch-scatter: ``BuildExtension.with_options(use_ninja=False)`` compiles every
source of every extension one after another).

A standalone script (standard library + the target interpreter's torch and setuptools): torchsmith
runs it with the *target* Python, in the project's folder, and never imports it itself.

    python cpp_ext_parallel.py --jobs N [--install-from dist] -- bdist_wheel --dist-dir dist

1. lists the project's extensions (setup.py run with ``setuptools.setup`` captured: nothing built);
2. builds them in up to N shard processes at once, each ``setup.py build_ext`` for its share of the
   extensions with its own build-temp folder (so no two share a ninja file or a compiler object),
   with ninja forced on inside each shard (its sources compile in parallel; MAX_JOBS split among
   the shards) and the compiler launcher (TORCHSMITH_LAUNCHER: sccache/ccache) in front of the
   C++ compiler and nvcc;
3. runs ``setup.py <the arguments after -->`` once more: every extension is up to date in the shared
   build/lib folder, so this only packages (or installs) what the shards built.

Exit status: the first failing phase's.
"""

# A script for the target interpreter, kept to os.path like probe/scripts.
# ruff: noqa: PTH100, PTH101, PTH116, PTH118, PTH120, PTH123, PTH208, S103
# mypy: disable-error-code="import-untyped, import-not-found, unused-ignore"

from __future__ import annotations

import argparse
import os
import runpy
import signal
import stat
import subprocess
import sys
import tempfile
import time


def _force_ninja_and_shard(shard: str | None) -> None:
    import torch.utils.cpp_extension as ce  # noqa: PLC0415

    original_init = ce.BuildExtension.__init__
    original_build = ce.BuildExtension.build_extensions

    def init(self: object, *args: object, **kwargs: object) -> None:
        kwargs["use_ninja"] = True
        original_init(self, *args, **kwargs)  # type: ignore[arg-type]

    def build_extensions(self: object) -> None:
        if shard:
            index, count = (int(x) for x in shard.split("/"))
            exts = self.extensions  # type: ignore[attr-defined]
            self.extensions = [e for i, e in enumerate(exts) if i % count == index]  # type: ignore[attr-defined]
            if not self.extensions:  # type: ignore[attr-defined]
                return
        original_build(self)  # type: ignore[arg-type]

    ce.BuildExtension.__init__ = init  # type: ignore[method-assign]
    ce.BuildExtension.build_extensions = build_extensions  # type: ignore[method-assign]


def _trust_up_to_date() -> None:
    """BuildExtension forces a rebuild whenever ninja is on (ninja decides what is stale); the
    shards built everything already, so let setuptools' own up-to-date check skip them."""
    import torch.utils.cpp_extension as ce  # noqa: PLC0415

    original = ce.BuildExtension.finalize_options

    def finalize_options(self: object) -> None:
        original(self)  # type: ignore[arg-type]
        self.force = False  # type: ignore[attr-defined]

    ce.BuildExtension.finalize_options = finalize_options  # type: ignore[method-assign]


def _run_setup(setup: str, args: list[str]) -> None:
    sys.argv = [setup, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(setup)))
    runpy.run_path(setup, run_name="__main__")


def _count_extensions(setup: str) -> int:
    import setuptools  # noqa: PLC0415

    found: list[int] = []

    def capture(**kwargs: object) -> None:
        found.append(len(kwargs.get("ext_modules") or []))  # type: ignore[arg-type]

    setuptools.setup = capture  # type: ignore[assignment]
    try:
        _run_setup(setup, ["--name"])
    finally:
        sys.argv = sys.argv[:1]
    return found[0] if found else 0


def _launcher_env(env: dict[str, str], tmp: str) -> None:
    """Put TORCHSMITH_LAUNCHER in front of the C++ compiler and nvcc, for any torch version."""
    launcher = env.get("TORCHSMITH_LAUNCHER")
    if not launcher:
        return
    env["TORCH_NO_COMPILER_WRAPPER"] = "1"  # newer torch would add a ccache of its own choosing
    cxx = env.get("CXX", "c++")
    wrapper = os.path.join(tmp, "c++")
    with open(wrapper, "w", encoding="utf-8") as fh:
        fh.write(f'#!/bin/sh\nexec "{launcher}" "{cxx}" "$@"\n')
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    env["CXX"] = wrapper
    cuda_home = env.get("CUDA_HOME") or env.get("CUDA_PATH") or "/usr/local/cuda"
    env.setdefault("PYTORCH_NVCC", f"{launcher} {os.path.join(cuda_home, 'bin', 'nvcc')}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--setup", default="setup.py")
    parser.add_argument("--install-from", metavar="DIR", help="then pip install DIR's newest wheel")
    parser.add_argument("--shard", help=argparse.SUPPRESS)
    parser.add_argument("--final", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    rest = opts.rest[1:] if opts.rest[:1] == ["--"] else opts.rest
    if opts.shard:
        _force_ninja_and_shard(opts.shard)
        _run_setup(opts.setup, rest)
        return 0
    if opts.final:
        _trust_up_to_date()
        _run_setup(opts.setup, rest)
        return 0

    count = _count_extensions(opts.setup)
    shards = max(1, min(opts.jobs, count))
    per_shard = max(1, -(-opts.jobs // shards))  # ceil: each shard's ninja gets its share
    print(
        f"torchsmith: {count} extensions, {shards} at once, MAX_JOBS={per_shard} in each",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="torchsmith-launcher-") as tmp:
        env = dict(os.environ, MAX_JOBS=str(per_shard), PYTHONUNBUFFERED="1")
        _launcher_env(env, tmp)
        me = os.path.abspath(__file__)
        started = time.monotonic()
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    me,
                    "--setup",
                    opts.setup,
                    "--shard",
                    f"{i}/{shards}",
                    "--",
                    "build_ext",
                    "--build-temp",
                    os.path.join("build", f"temp.torchsmith-{i}"),
                ],
                env=env,
            )
            for i in range(shards)
        ]
        status = _wait_all(procs)
        print(f"torchsmith: extensions built in {time.monotonic() - started:.1f}s", flush=True)
        if status != 0:
            return status
        if rest:
            status = subprocess.call(
                [sys.executable, me, "--setup", opts.setup, "--final", "--", *rest], env=env
            )
        if status != 0 or not opts.install_from:
            return status
        return _install_newest_wheel(opts.install_from)


def _install_newest_wheel(folder: str) -> int:
    wheels = [os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".whl")]
    if not wheels:
        print(f"torchsmith: no wheel in {folder}", flush=True)
        return 1
    wheel = max(wheels, key=os.path.getmtime)
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--force-reinstall"]
    return subprocess.call([*pip, wheel])


def _wait_all(procs: list[subprocess.Popen[bytes]]) -> int:
    """Wait for every shard; on the first failure stop the others."""
    pending = list(procs)
    while pending:
        for proc in list(pending):
            code = proc.poll()
            if code is None:
                continue
            pending.remove(proc)
            if code != 0:
                for other in pending:
                    other.send_signal(signal.SIGTERM)
                for other in pending:
                    other.wait()
                return code
        time.sleep(0.1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
