"""Shaped like torch-scatter 2.1.2's setup.py: one extension per op, ninja turned off."""

import glob
import os

import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension

WITH_CUDA = torch.cuda.is_available() and CUDA_HOME is not None
if os.getenv("FORCE_CUDA", "0") == "1":
    WITH_CUDA = True


def get_extensions():
    extensions = []
    for main in sorted(glob.glob(os.path.join("csrc", "*.cpp"))):
        name = os.path.splitext(os.path.basename(main))[0]
        sources = [main]
        cuda_src = os.path.join("csrc", "cuda", f"{name}_cuda.cu")
        Extension = CppExtension
        if WITH_CUDA and os.path.exists(cuda_src):
            Extension = CUDAExtension
            sources += [cuda_src]
        extensions.append(Extension(f"scatter_like._{name}", sources))
    return extensions


setup(
    name="scatter_like",
    version="0.0.1",
    packages=["scatter_like"],
    ext_modules=get_extensions(),
    cmdclass={"build_ext": BuildExtension.with_options(no_python_abi_suffix=True, use_ninja=False)},
)
