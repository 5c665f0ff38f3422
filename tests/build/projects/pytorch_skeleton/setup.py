# Skeleton of PyTorch's setup.py (the real one drives tools/setup_helpers/cmake.py).
from setuptools import setup

setup(name="torch")
