# A tiny torch C++ extension that, like torch-scatter, turns ninja off (the slow, serial path).
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(
    name="tinyext",
    version="0.1",
    ext_modules=[CppExtension("tinyext", ["tinyext.cpp"])],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=False)},
)
