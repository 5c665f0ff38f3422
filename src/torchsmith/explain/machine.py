"""Let the machine's own facts decide a log's GPU symptom (``explain --probe FILE`` / ``--here``).

Many logs show only a symptom: ``torch.cuda.is_available()`` printed False, "no GPU found",
"no kernel image is available". Its cause is often a fact of the machine the log came from, one
that no log line states: torch is a CPU build, the driver is below the floor of torch's CUDA line,
no GPU is visible, or torch's binaries lack the GPU's architecture. doctor's findings (pure checks
of a probe against the knowledge base) know those facts. Given them, this module

- puts the machine's fact first when the log's lead diagnosis is a symptom of the GPU family and the
  machine names a cause of that family (the log's symptom follows it, as its evidence);
- confirms the log's lead when the machine names the same cause (its fact joins the evidence);
- adds the machine's cause after the log's own when the log names a different cause.

Only findings of severity error or warning take part (an info such as "a CPU build, fine on a
machine without a GPU" decides nothing), and a healthy log stays healthy: explain does not diagnose
a machine, doctor does. Pure: no probing here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from torchsmith.explain.model import Diagnosis, ExplainResult
from torchsmith.probe.model import Finding
from torchsmith.taxonomy import SEVERITY_ORDER

# The causes that make a GPU unusable, in the order in which one explains the others: a CPU build
# explains every CUDA symptom; then a driver too old for torch's CUDA; then no GPU visible at all;
# then a GPU whose architecture the torch binaries lack.
GPU_FAMILY = ("cpu-only-torch", "driver-too-old", "no-gpu-visible", "arch-not-compiled")

TITLES = {
    "cpu-only-torch": "torch on this machine is a CPU-only build",
    "driver-too-old": "The NVIDIA driver on this machine is too old for this torch",
    "no-gpu-visible": "No NVIDIA GPU is visible on this machine",
    "arch-not-compiled": "This torch carries no code for this machine's GPU",
}


def deciding_fact(findings: Sequence[Finding]) -> Finding | None:
    """The machine's finding that explains a GPU symptom best, or None."""
    facts = [f for f in findings if f.category in GPU_FAMILY and f.severity in ("error", "warning")]
    if not facts:
        return None
    return min(facts, key=lambda f: (GPU_FAMILY.index(f.category), SEVERITY_ORDER[f.severity]))


def with_machine_facts(
    result: ExplainResult, findings: Sequence[Finding], source: str
) -> ExplainResult:
    """``result`` with the machine's deciding fact (if any) ranked as described above."""
    if result.healthy or not result.diagnoses:
        return result
    lead, rest = result.diagnoses[0], result.diagnoses[1:]
    fact = deciding_fact(findings)
    if fact is None or lead.category not in GPU_FAMILY:
        return result
    if fact.category == lead.category:
        confirmed = replace(
            lead,
            evidence=(*lead.evidence, f"{source}: {fact.message}"),
            related=(*lead.related, f"machine.{fact.category}"),
        )
        return replace(result, diagnoses=(confirmed, *rest))
    machine = _diagnosis(fact, source, lead)
    ordered = (machine, lead, *rest) if lead.symptom else (lead, machine, *rest)
    title = ordered[0].title
    return replace(
        result, diagnoses=ordered, summary=f"{len(ordered)} problem(s) found; most likely: {title}"
    )


def _diagnosis(fact: Finding, source: str, lead: Diagnosis) -> Diagnosis:
    if lead.symptom:
        why = (
            f"The log shows the consequence ({lead.title[0].lower()}{lead.title[1:]}); this "
            "fact of the machine the log came from is its cause."
        )
    else:
        why = (
            f"The log names another cause first ({lead.title}); this one holds on the machine too."
        )
    return Diagnosis(
        category=fact.category,
        rule=f"machine.{fact.category}",
        title=TITLES[fact.category],
        severity=fact.severity,
        line=0,
        evidence=(f"{source}: {fact.message}",),
        explanation=f"{fact.message}. {why}",
        fix=fact.fix,
        file=source,
        related=(lead.rule,),
        source=fact.source or "",
    )
