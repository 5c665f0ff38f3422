"""The exact install commands for a chosen wheel or source build.

Where the plan is for an interpreter named with ``--python``, every command names it
(``uv pip install --python PATH``, ``PATH -m pip install``), quoted for the shells of the target's
OS: copied into another shell, they still install into that environment and no other.
"""

from __future__ import annotations

import shlex

from torchsmith.plan.model import Installer, SourceBuild
from torchsmith.util.shellwords import WINDOWS_BARE, ps_quote


def wheel_commands(
    torch: str,
    index_url: str | None,
    companions: dict[str, str],
    installer: Installer | None,
    *,
    python: str | None = None,
    os_name: str = "linux",
) -> dict[str, str]:
    reqs = [f"torch=={torch}"]
    reqs += [f"{name}=={minor}.*" for name, minor in sorted(companions.items())]
    args = " ".join(f'"{r}"' if "*" in r else r for r in reqs)
    index = f" --index-url {index_url}" if index_url else ""
    forms: dict[str, dict[str, str]] = {}
    for shell, exe in _interpreters(python, os_name):
        target = f" --python {exe[1]}" if exe else ""
        run = exe[0] if exe else "python"
        label = f", {shell}" if shell else ""
        forms.setdefault("uv", {})[f"uv{label}"] = f"uv pip install{target} {args}{index}"
        forms.setdefault("pip", {})[f"pip{label}"] = f"{run} -m pip install {args}{index}"
        # PyTorch's wheels come from PyPI / download.pytorch.org; in a conda env, pip installs
        # them (the env's own interpreter where one was named)
        conda = f"{run} -m pip" if exe else "conda run python -m pip"
        forms.setdefault("conda", {})[f"conda{label}"] = f"{conda} install {args}{index}"
    chosen = ("uv", "pip") if installer is None else (installer,)
    return {label: line for name in chosen for label, line in forms[name].items()}


def _interpreters(
    python: str | None, os_name: str
) -> list[tuple[str | None, tuple[str, str] | None]]:
    """(shell label, (the interpreter as a command, as an argument)) for each shell that needs
    its own spelling: one for POSIX shells, and on Windows one, or cmd's and PowerShell's where
    the path must be quoted (PowerShell runs a quoted path only through its ``&`` operator)."""
    if python is None:
        return [(None, None)]
    if os_name != "windows":
        quoted = shlex.quote(python)
        return [(None, (quoted, quoted))]
    if WINDOWS_BARE.match(python):
        return [(None, (python, python))]
    cmd = f'"{python}"'
    ps = ps_quote(python)  # ' and the typographic quotes PowerShell also takes for one, doubled
    return [("cmd", (cmd, cmd)), ("PowerShell", (f"& {ps}", ps))]


def source_commands(build: SourceBuild, os_name: str, python: str | None = None) -> dict[str, str]:
    git = f"git clone --recursive --branch v{build.torch} https://github.com/pytorch/pytorch"
    archs = build.torch_cuda_arch_list
    if os_name == "windows":
        shells = dict(_interpreters(python, os_name))
        cmd_exe = (shells.get("cmd") or shells.get(None) or ("python", ""))[0]
        ps_exe = (shells.get("PowerShell") or shells.get(None) or ("python", ""))[0]
        # cmd and PowerShell set variables differently (in PowerShell `set` is Set-Variable), and
        # Windows PowerShell 5.1 has no &&: each step there waits for the last one's success
        ok = "if ($LASTEXITCODE -eq 0) {"
        cmd_reqs = f"{cmd_exe} -m pip install -r requirements.txt"
        cmd_install = f"{cmd_exe} -m pip install --no-build-isolation -v ."
        return {
            "pip, cmd": f"{git} && cd pytorch && {cmd_reqs} && "
            f'set "TORCH_CUDA_ARCH_LIST={archs}" && {cmd_install}',
            "pip, PowerShell": (
                f"{git}; {ok} cd pytorch; {ps_exe} -m pip install -r requirements.txt; {ok} "
                f"$env:TORCH_CUDA_ARCH_LIST = '{archs}'; "
                f"{ps_exe} -m pip install --no-build-isolation -v . }} }}"
            ),
        }
    exe = shlex.quote(python) if python else "python"
    clone = f"{git} && cd pytorch && {exe} -m pip install -r requirements.txt"
    install = f"{exe} -m pip install --no-build-isolation -v ."
    return {"pip": f'{clone} && TORCH_CUDA_ARCH_LIST="{archs}" USE_CUDA=1 {install}'}
