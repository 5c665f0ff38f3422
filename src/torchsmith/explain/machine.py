"""Let the machine's own facts decide a log's GPU symptom (``explain --probe FILE`` / ``--here``).

Many logs show only a symptom: ``torch.cuda.is_available()`` printed False, "no GPU found",
"no kernel image is available". Its cause is often a fact of the machine the log came from, one
that no log line states: torch is a CPU build, the driver is below the floor of torch's CUDA line,
no GPU is visible, or torch's binaries lack the GPU's architecture. doctor's findings (pure checks
of a probe against the knowledge base) know those facts. Given them, this module

- puts the machine's fact first when the log's lead diagnosis is a symptom of the GPU family and the
  machine names a cause that can bring that symptom about (``EXPLAINED_BY``; the log's symptom
  follows it, as its evidence);
- confirms the log's lead when the machine names the same cause (its fact joins the evidence);
- adds the machine's cause after the log's own when the log names a different cause.

Only findings of severity error or warning take part (an info such as "a CPU build, fine on a
machine without a GPU" decides nothing), and a healthy log stays healthy: explain does not diagnose
a machine, doctor does (its summary only says how many errors doctor would show). Pure: no probing
here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from torchsmith.explain.model import Diagnosis, ExplainResult, summary_line
from torchsmith.probe.model import Finding
from torchsmith.taxonomy import SEVERITY_ORDER

# For each category a log's lead may have: the machine's causes that can bring it about, the one
# that explains the others first. "CUDA is not available" comes from a CPU build, a driver too old
# for torch's CUDA, or no GPU visible (a GPU lacking torch's arch still shows as available); "no
# kernel image" from torch lacking the GPU's arch, or a driver too old to JIT-compile its PTX.
EXPLAINED_BY = {
    "no-gpu-visible": ("cpu-only-torch", "driver-too-old", "no-gpu-visible"),
    "cpu-only-torch": ("cpu-only-torch",),
    "driver-too-old": ("driver-too-old",),
    "arch-not-compiled": ("arch-not-compiled", "driver-too-old"),
}

TITLES = {
    "cpu-only-torch": "torch on this machine is a CPU-only build",
    "driver-too-old": "The NVIDIA driver on this machine is too old for this torch",
    "no-gpu-visible": "No NVIDIA GPU is visible on this machine",
    "arch-not-compiled": "This torch carries no code for this machine's GPU",
}


def deciding_fact(findings: Sequence[Finding], category: str) -> Finding | None:
    """The machine's finding that best explains a log's ``category`` of GPU problem, or None."""
    causes = EXPLAINED_BY.get(category, ())
    facts = [f for f in findings if f.category in causes and f.severity in ("error", "warning")]
    if not facts:
        return None
    return min(facts, key=lambda f: (causes.index(f.category), SEVERITY_ORDER[f.severity]))


def with_machine_facts(
    result: ExplainResult, findings: Sequence[Finding], source: str
) -> ExplainResult:
    """``result`` with the machine's deciding fact (if any) ranked as described above."""
    if result.healthy or not result.diagnoses:
        errors = sum(f.severity == "error" for f in findings)
        if not errors:
            return result
        note = f"; {source} has {errors} error finding(s): torchsmith doctor shows them"
        return replace(result, summary=result.summary + note)
    lead, rest = result.diagnoses[0], result.diagnoses[1:]
    fact = deciding_fact(findings, lead.category)
    if fact is None:
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
    lines = sum(i.lines for i in result.inputs)
    return replace(result, diagnoses=ordered, summary=summary_line(ordered, lines))


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
        basis="machine",
    )
