"""Three tiny extensions (Python C API only: they compile in a second) with ninja turned off."""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(
    name="multi_ext",
    version="0.1",
    ext_modules=[CppExtension(f"_{m}", [f"{m}.cpp"]) for m in "abc"],
    cmdclass={"build_ext": BuildExtension.with_options(no_python_abi_suffix=True, use_ninja=False)},
)
