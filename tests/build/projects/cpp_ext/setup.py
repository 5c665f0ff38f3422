"""A C++ extension built with torch.utils.cpp_extension (ninja on, CPU only)."""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(
    name="tiny_cpp_ext",
    version="0.1.0",
    ext_modules=[CppExtension("tiny_cpp_ext", ["tiny.cpp"])],
    cmdclass={"build_ext": BuildExtension},
)
