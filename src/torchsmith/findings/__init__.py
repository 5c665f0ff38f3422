"""Doctor's findings: every problem a probe reveals, each with a category and a concrete fix."""

from torchsmith.findings.analyze import analyze, load_knowledge_quietly

__all__ = ["analyze", "load_knowledge_quietly"]
