"""Doctor's findings: every problem a probe reveals, each with a category and a concrete fix."""

from torchsmith.findings.analyze import analyze

__all__ = ["analyze"]
