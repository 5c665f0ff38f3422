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
    clone = (
        f"git clone --recursive --branch v{build.torch} https://github.com/pytorch/pytorch"
        " && cd pytorch && python -m pip install -r requirements.txt"
    )
    if os_name == "windows":
        env = f'set "TORCH_CUDA_ARCH_LIST={build.torch_cuda_arch_list}" && '
    else:
        env = f'TORCH_CUDA_ARCH_LIST="{build.torch_cuda_arch_list}" USE_CUDA=1 '
    return {"pip": f"{clone} && {env}python -m pip install --no-build-isolation -v ."}
