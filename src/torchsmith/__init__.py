"""torchsmith: get a working, fast GPU PyTorch onto a machine and keep it working."""

__version__ = "0.1.0"
