"""The exact install commands for a chosen wheel or source build."""

from __future__ import annotations

from torchsmith.plan.model import Installer, SourceBuild


def wheel_commands(
    torch: str,
    index_url: str | None,
    companions: dict[str, str],
    installer: Installer | None,
) -> dict[str, str]:
    reqs = [f"torch=={torch}"]
    reqs += [f"{name}=={minor}.*" for name, minor in sorted(companions.items())]
    args = " ".join(f'"{r}"' if "*" in r else r for r in reqs)
    index = f" --index-url {index_url}" if index_url else ""
    forms = {
        "uv": f"uv pip install {args}{index}",
        "pip": f"python -m pip install {args}{index}",
        # PyTorch's wheels come from PyPI / download.pytorch.org; in a conda env, pip installs them.
        "conda": f"conda run python -m pip install {args}{index}",
    }
    if installer is None:
        return {"uv": forms["uv"], "pip": forms["pip"]}
    return {installer: forms[installer]}


def source_commands(build: SourceBuild, os_name: str) -> dict[str, str]:
    git = f"git clone --recursive --branch v{build.torch} https://github.com/pytorch/pytorch"
    reqs = "python -m pip install -r requirements.txt"
    clone = f"{git} && cd pytorch && {reqs}"
    install = "python -m pip install --no-build-isolation -v ."
    archs = build.torch_cuda_arch_list
    if os_name == "windows":
        # cmd and PowerShell set variables differently (in PowerShell `set` is Set-Variable), and
        # Windows PowerShell 5.1 has no &&: each step there waits for the last one's success
        ok = "if ($LASTEXITCODE -eq 0) {"
        return {
            "pip, cmd": f'{clone} && set "TORCH_CUDA_ARCH_LIST={archs}" && {install}',
            "pip, PowerShell": (
                f"{git}; {ok} cd pytorch; {reqs}; {ok} "
                f"$env:TORCH_CUDA_ARCH_LIST = '{archs}'; {install} }} }}"
            ),
        }
    return {"pip": f'{clone} && TORCH_CUDA_ARCH_LIST="{archs}" USE_CUDA=1 {install}'}
