"""Issue 11, plan half: decide by the certain fact first; source builds pick their toolkit from
the source; every reason reads as a sentence. Scenarios built from primary facts:
- CUDA 13.0's nvcc targets sm_75 and newer only (cuda_toolkits.toml, nvcc_wheels);
- the CUDA 13.x driver floor is 580.65.06 on Linux (driver_compat.toml);
- torch 2.15 ships cu130 (arch list unverified) and cu132 wheels only (gh_190385);
- torch 2.14 raised the CMake minimum for source builds to CUDA 12.6 (#192257).
"""

from __future__ import annotations

import itertools
import re

import pytest

from torchsmith.knowledge import load_knowledge
from torchsmith.knowledge.compat import parse_cc
from torchsmith.plan import findings as plan_findings
from torchsmith.plan.machine import WhatIf, apply_what_if, blank_facts
from torchsmith.plan.model import Plan, PlanOptions
from torchsmith.plan.planner import make_plan

kb = load_knowledge()


def plan(os: str, gpu: str, driver: str | None, torch: str | None, **what: object) -> Plan:
    facts = apply_what_if(
        blank_facts(os),
        WhatIf(os=os, gpus=(gpu,), driver=driver, **what),  # type: ignore[arg-type]
        kb,
    )
    return make_plan(facts, kb, PlanOptions(torch=torch))


def categories(p: Plan, variant: str) -> set[str]:
    return {r.category for r in p.rejected if r.variant == variant}


def test_the_unverified_cu130_wheel_of_2_15_is_arch_not_compiled_for_pascal() -> None:
    wheel = kb.wheel("2.15", "cu130", "linux", "x86_64")
    assert wheel is not None
    assert wheel.archs is None
    p = plan("linux", "GTX 1080", "580.95.05", ">=2.15")
    assert categories(p, "cu130") == {"arch-not-compiled"}
    reason = next(r.reason for r in p.rejected if r.variant == "cu130")
    assert "CUDA 13.0" in reason
    assert "sm_75" in reason
    assert "sm_61" in reason


def test_volta_is_arch_not_compiled_too() -> None:
    p = plan("linux", "Tesla V100-SXM2-16GB", "580.95.05", "==2.15.*")
    assert categories(p, "cu130") == {"arch-not-compiled"}


def test_an_unverified_wheel_below_the_driver_floor_is_driver_too_old() -> None:
    p = plan("linux", "RTX 4090", "535.104.05", "==2.15.*")
    assert categories(p, "cu130") == {"driver-too-old"}
    assert categories(p, "cu132") == {"driver-too-old"}
    assert any(f.category == "driver-too-old" and "580.65.06" in f.message for f in p.findings)


def test_windows_unverified_wheel_below_the_floor_is_driver_too_old() -> None:
    wheel = kb.wheel("2.15", "cu132", "windows", "x86_64")
    assert wheel is not None
    assert wheel.archs is None
    p = plan("windows", "RTX 4090", "560.94", "==2.15.*")
    assert categories(p, "cu132") == {"driver-too-old"}


def test_other_only_where_nothing_known_decides() -> None:
    p = plan("linux", "RTX 4090", "580.95.05", "==2.15.*")
    assert categories(p, "cu130") == {"other"}
    assert p.recommendation.variant == "cu132"


def test_pascal_with_2_15_is_a_source_build_with_a_12x_toolkit() -> None:
    p = plan("linux", "GTX 1080", "580.95.05", ">=2.15")
    rec, build = p.recommendation, p.source_build
    assert rec.kind == "source"
    assert build is not None
    assert build.torch == "2.15.0"
    assert build.torch_cuda_arch_list == "6.1"
    assert build.toolkit == "12.9"  # 13.0 dropped sm_50..sm_72
    assert parse_cc(build.toolkit_min) >= (12, 6)  # the 2.14+ CMake minimum
    assert build.toolkit_max == "12.9"
    assert "pt_release_notes_214" in build.sources
    assert 'TORCH_CUDA_ARCH_LIST="6.1"' in rec.commands["pip"]
    assert "v2.15.0" in rec.commands["pip"]


def test_an_installed_12_6_toolkit_is_used_for_the_source_build() -> None:
    p = plan("linux", "GTX 1080", "580.95.05", ">=2.15", cuda_toolkits=("12.6",))
    assert p.source_build is not None
    assert p.source_build.toolkit == "12.6"
    assert p.source_build.installed_toolkit_ok is True


def test_an_installed_toolkit_too_new_for_the_gpu_says_which_side_it_is_on() -> None:
    # CUDA 13.0 cannot compile for sm_61 because it is newer than the last toolkit that can:
    # naming 11.7 ("the first that can") would send the user to an older toolkit they do not need
    p = plan("linux", "GTX 1080", "580.95.05", ">=2.15", cuda_toolkits=("13.0",))
    (f,) = [f for f in p.findings if f.category == "toolkit-too-old-for-arch"]
    assert "CUDA 11.7 to 12.9 (CUDA 13.0 dropped sm_61)" in f.message
    assert "first toolkit" not in f.message
    assert "12.6–12.9" in f.fix  # the source build's accepted range


def test_a_driver_older_than_the_gpus_architecture_is_named_first() -> None:
    # 535 shipped before CUDA 12.6 (floor 560.28.03); sm_120 came with CUDA 12.8: no 535 driver
    # runs an RTX 5070, so "cu128 through minor-version compatibility" would be wrong advice
    p = plan("linux", "RTX 5070", "535.183.01", None)
    rec = p.recommendation
    assert rec.kind == "wheel"
    assert rec.reasons[0].startswith("first update the NVIDIA driver")
    assert not any("minor-version compatibility" in r for r in rec.reasons)
    (f,) = [f for f in p.findings if f.subject == "driver"]
    assert (f.category, f.severity) == ("driver-too-old", "error")
    assert "sm_120 GPUs came with CUDA 12.8" in f.message
    assert rec.min_driver is not None
    assert rec.min_driver in (f.fix or "")
    assert p.machine.driver == "535.183.01"  # the plan still reports the machine as given


def test_no_claim_where_the_knowledge_cannot_prove_it() -> None:
    # 565 sits between CUDA 12.6's and 12.8's minimums: it may or may not know sm_120, and a
    # GPU older than the toolkit data (sm_86) never gets the claim
    assert not any(
        f.severity == "error" for f in plan("linux", "RTX 5070", "565.57.01", None).findings
    )
    ampere = plan("linux", "RTX 3090", "470.82.01", None)
    assert not any("cannot run the" in f.message for f in ampere.findings)


def test_a_driver_below_the_first_cuda_for_the_gpu_gets_a_warning() -> None:
    # 565 is below CUDA 12.8's minimum (570.26), the first CUDA for sm_120: not provably too old,
    # but the RTX 50 series needs the R570 branch, so the plan says so beside its wheel
    p = plan("linux", "RTX 5090", "565.57.01", None)
    (f,) = [f for f in p.findings if f.subject == "driver" and "first CUDA for" in f.message]
    assert f.category == "driver-too-old"
    assert "570.26" in f.message
    assert "570.26" in (f.fix or "")
    assert p.recommendation.kind == "wheel"


def test_kepler_with_2_15_says_no_accepted_toolkit_can_target_it() -> None:
    p = plan("linux", "Tesla K80", "470.82.01", ">=2.15")
    assert p.recommendation.kind == "none"
    text = " ".join(p.recommendation.reasons)
    assert "none of those toolkits can compile for sm_37" in text
    assert "CUDA 11.8" in text  # the newest nvcc that still targets sm_37


def test_blackwell_pinned_to_2_6_names_the_first_toolkit_that_can() -> None:
    p = plan("linux", "RTX 5070", None, "==2.6.*")
    text = " ".join(p.recommendation.reasons)
    assert "CUDA 12.8 is the first toolkit that can compile for sm_120" in text
    assert "only newer torch releases accept it" in text


def test_a_driver_too_old_for_every_capable_toolkit_is_said_plainly() -> None:
    p = plan("linux", "GTX 1080", "470.82.01", ">=2.15")
    assert p.recommendation.kind == "none"
    assert any("need a newer driver than 470.82.01" in r for r in p.recommendation.reasons)


def test_every_release_has_a_sourced_source_build_range() -> None:
    minors = {r.minor for r in kb.releases}
    ranges = {r.torch: r for r in kb.source_builds}
    assert minors <= set(ranges)
    for r in ranges.values():
        assert r.sources
        assert all(s in kb.sources for s in r.sources)
        assert parse_cc(r.cuda_min) <= parse_cc(r.cuda_max)
        assert kb.toolkit(r.cuda_max) is not None


# -- every reason reads as a sentence ------------------------------------------------------

_GARBLE = (
    re.compile(r"\s{2,}"),  # doubled spaces
    re.compile(r"\s[,;:.)]"),  # space before punctuation
    re.compile(r"[,;:]$"),  # dangling clause
    re.compile(r"\b(\w+) \1\b"),  # "the the"
    re.compile(r"\bcan is\b|\bis CUDA [\d.]+ compile\b"),  # the garble issue 11 quotes
    re.compile(r"\bNone\b|[{}]|\?\)|\(\s*\)"),  # unformatted placeholders
)


def _sentence_problems(text: str) -> list[str]:
    problems = [p.pattern for p in _GARBLE if p.search(text)]
    if not text or not text[0].isalnum():
        problems.append("does not start with a word")
    if text.count("(") != text.count(")"):
        problems.append("unbalanced parentheses")
    if len(text.split()) < 4:
        problems.append("too short to be a sentence")
    return problems


_GPUS = (
    "GTX 1080",
    "Tesla V100-SXM2-16GB",
    "RTX 4090",
    "RTX 5070",
    "Tesla K80",
    "NVIDIA H200",
    "Radeon RX 7900 XTX",
    "AMD Radeon RX 6700 XT",
    "AMD Instinct MI300X",
    "Intel Arc B580",
    "Intel Data Center GPU Max 1550",
)
_DRIVERS = (None, "470.82.01", "535.104.05", "580.95.05")
_TORCH = (None, ">=2.15", "==2.6.*", "==2.11.*", "<2.3")


@pytest.mark.parametrize("os", ["linux", "windows", "macos"])
def test_every_reason_of_many_scenarios_reads_as_a_sentence(os: str) -> None:
    bad: list[str] = []
    for gpu, driver, torch in itertools.product(_GPUS, _DRIVERS, _TORCH):
        p = plan(os, gpu, driver, torch)
        texts = [
            *p.recommendation.reasons,
            *(r.reason for r in p.rejected),
            *(f.message for f in p.findings),
            *(a for alt in p.alternatives for a in alt.reasons),
        ]
        for text in texts:
            problems = _sentence_problems(text)
            if problems:
                bad.append(f"{gpu}/{driver}/{torch}: {text!r}: {problems}")
    assert not bad, "\n".join(bad[:20])


def test_the_gpu_decides_before_the_python_version() -> None:
    """Python 3.9 and torch 2.15 on a GTX 1080: a 3.9 wheel would not run on sm_61 either, so
    the rejection names the GPU, not Python (torch 2.15 has no cp39 wheels)."""
    assert kb.python_supported("2.15.0", "3.9", "linux-x86_64") is False
    p = plan("linux", "GTX 1080", "580.95.05", "==2.15.*", python="3.9")
    cats = {r.category for r in p.rejected}
    assert "python-unsupported" not in cats
    assert "arch-not-compiled" in cats
    # where a wheel would serve the GPU, Python is what to change
    q = plan("linux", "RTX 4090", "580.95.05", "==2.15.*", python="3.9")
    assert {r.category for r in q.rejected} == {"python-unsupported"}


def test_a_source_build_is_not_offered_for_a_python_newer_than_the_release() -> None:
    # torch 2.7.1 (the last that CUDA 11.8 builds for sm_37) shipped wheels up to Python 3.13;
    # its Requires-Python has no upper bound, but a build on 3.14 is not what it was released for
    k80 = plan("linux", "Tesla K80", None, None, python="3.14")
    assert k80.recommendation.kind == "none"
    assert any("predates Python 3.14" in r for r in k80.recommendation.reasons)
    assert plan("linux", "Tesla K80", None, None, python="3.12").recommendation.kind == "wheel"


def test_an_older_patch_that_ships_for_this_python_is_planned() -> None:
    # 2.12.1 has no 3.13t wheels; 2.12.0 does: the 2.12 line is planned with 2.12.0
    p = plan("linux", "RTX 4090", None, "==2.12.*", python="3.13t")
    assert p.recommendation.kind == "wheel"
    assert p.recommendation.torch == "2.12.0"


def test_the_python_fix_names_free_threaded_builds_apart() -> None:
    # a range "3.11-3.15t" would include the 3.13t the user has, which 2.15 ships no wheel for
    p = plan("linux", "RTX 4090", None, None, python="3.13t")
    (f,) = [f for f in p.findings if f.category == "python-unsupported"]
    assert f.fix == "use Python 3.11–3.15 (free-threaded: 3.14t, 3.15t) for torch 2.15.0"


def test_python_lists_with_only_free_threaded_builds() -> None:
    from torchsmith.plan.findings import _pythons  # noqa: PLC0415 - the helper alone

    assert _pythons(["3.13t"]) == "Python 3.13t"
    assert _pythons(["3.12"]) == "Python 3.12"


def test_with_nothing_verified_left_the_unestablished_wheel_is_named_by_its_sibling() -> None:
    # Windows, Python 3.15: only 2.15 ships 3.15 wheels, and its Windows cu132 arch list is not
    # established; its Linux x86_64 cu132 wheels carry sm_120 (verified-binary).
    windows = kb.wheel("2.15", "cu132", "windows", "x86_64")
    assert windows is not None
    assert windows.archs is None
    p = plan("windows", "RTX 5070", "581.57", None, python="3.15")
    # a 2.15 source build is planned, and the wheel that probably serves is named first
    assert (p.recommendation.kind, p.recommendation.torch) == ("source", "2.15.0")
    assert p.recommendation.reasons[0].startswith("before building, try a wheel:")
    hint = next(r for r in p.recommendation.reasons if "may serve it" in r)
    assert "torch 2.15.0+cu132" in hint
    assert "on its linux-x86_64 wheels the NVIDIA GeForce RTX 5070 runs its sm_120 code" in hint
    assert "https://download.pytorch.org/whl/cu132" in hint
    # a verified fit needs no hint
    assert not any(
        "may serve it" in r
        for r in plan("windows", "RTX 5070", "581.57", None).recommendation.reasons
    )


def test_the_sibling_hint_names_the_code_a_gpu_runs_not_its_own_arch() -> None:
    # the RTX 4090 is sm_89; the Linux cu132 wheels of 2.15 carry sm_86, which it runs
    p = plan("windows", "RTX 4090", "581.57", None, python="3.15")
    hint = next(r for r in p.recommendation.reasons if "may serve it" in r)
    assert "runs its sm_86 code" in hint
    assert "sm_89" not in hint


def test_a_source_build_names_the_host_compilers_of_its_os() -> None:
    windows = plan("windows", "GTX 1080", "581.57", ">=2.15")
    linux = plan("linux", "GTX 1080", "580.95.05", ">=2.15")
    win_host = next(r for r in windows.recommendation.reasons if r.startswith("host compiler"))
    linux_host = next(r for r in linux.recommendation.reasons if r.startswith("host compiler"))
    assert "MSVC" in win_host
    assert "gcc" not in win_host
    assert "gcc <=" in linux_host
    assert "MSVC" not in linux_host


def test_a_windows_source_build_gives_cmd_and_powershell_lines() -> None:
    rec = plan("windows", "GTX 1080", "581.57", ">=2.15").recommendation
    assert set(rec.commands) == {"pip, cmd", "pip, PowerShell"}
    assert 'set "TORCH_CUDA_ARCH_LIST=6.1"' in rec.commands["pip, cmd"]
    ps = rec.commands["pip, PowerShell"]
    assert "$env:TORCH_CUDA_ARCH_LIST = '6.1'" in ps
    assert "&&" not in ps  # Windows PowerShell 5.1 has no &&


def test_native_code_outranks_a_driver_native_wheel_that_needs_ptx_jit() -> None:
    # RTX 5090 (sm_120): torch 2.7's cu128 wheels carry sm_120; its cu118 ones only old PTX
    p = plan("windows", "RTX 5090", "566.36", "<2.8", python="3.12")
    assert (p.recommendation.torch, p.recommendation.variant) == ("2.7.1", "cu128")


def test_the_driver_fix_asks_for_what_the_gpu_needs_when_that_is_more() -> None:
    # driver 535 cannot run an RTX 5070; a torch < 2.7 wheel needs only 452.39 (cu118)
    p = plan("windows", "RTX 5070", "535.104.05", "<2.7", python="3.12")
    lead = p.findings[0]
    assert lead.category == "driver-too-old"
    assert "452.39" not in lead.fix
    floor = plan_findings.driver_for_gpus("windows", kb, p.machine.gpus)
    assert floor is not None
    assert f">= {floor}" in lead.fix


def test_a_platform_without_cuda_wheels_gets_a_source_build_and_says_why() -> None:
    p = plan("linux", "Tesla T4", "560.94", "<2.7", python="3.12", arch="aarch64")
    assert p.recommendation.kind == "source"
    assert p.recommendation.torch == "2.6.0"
    assert any(
        r.torch == "2.6.0" and "no CUDA wheel of torch 2.6.0 for linux-aarch64" in r.reason
        for r in p.rejected
    )


def test_a_source_build_says_when_the_installed_toolkit_cannot_be_used() -> None:
    facts = apply_what_if(
        blank_facts("linux"),
        WhatIf(os="linux", gpus=("RTX 2080",), python="3.12", cuda_toolkits=("10.2",)),
        kb,
    )
    p = make_plan(facts, kb, PlanOptions(prefer="source"))
    found = next(f for f in p.findings if f.category == "toolkit-torch-cuda-mismatch")
    assert "CUDA 10.2" in found.message
    assert "CUDA_HOME" in found.fix


def test_a_family_name_shorter_than_its_models_is_found_when_they_agree() -> None:
    gpu = kb.find_gpu("RTX PRO 6000")  # three Blackwell editions, all sm_120
    assert gpu is not None
    assert gpu.compute_capability == "12.0"
    assert kb.find_gpu("RTX 50") is None  # not a prefix of whole words
