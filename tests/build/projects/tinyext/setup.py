# A tiny torch C++ extension project that, like torch-scatter, turns ninja off (the slow, serial
# path): two extensions, one against torch, one against the plain Python C API (quick to compile).
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(
    name="tinyext",
    version="0.1",
    ext_modules=[
        CppExtension("tinyext", ["tinyext.cpp"]),
        CppExtension("tinyext_plain", ["plain.cpp"]),
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=False)},
)
