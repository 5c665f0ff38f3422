"""Every rule is valid, has a real source, and matches its own example lines end to end."""

from __future__ import annotations

import re

import pytest

from torchsmith.explain.engine import Explainer, match_line
from torchsmith.explain.normalize import clean_line
from torchsmith.explain.rules import Rule, load_rules, load_tables, template_fields
from torchsmith.knowledge import load_knowledge
from torchsmith.taxonomy import CATEGORIES

RULES = load_rules()


def test_rules_load_and_ids_are_unique() -> None:
    assert len(RULES) >= 40
    assert len({r.id for r in RULES}) == len(RULES)


def test_every_category_has_a_rule() -> None:
    covered = {r.category for r in RULES}
    assert set(CATEGORIES) <= covered, sorted(set(CATEGORIES) - covered)


def test_tables_load() -> None:
    assert load_tables()["min_cuda_for_arch"]["120"] == "12.8"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_has_source_and_examples(rule: Rule) -> None:
    assert rule.source.startswith("https://github.com/")
    assert rule.examples, f"{rule.id} needs real example lines"


@pytest.mark.parametrize(
    ("rule", "example"),
    [(r, e) for r in RULES for e in r.examples],
    ids=lambda v: v.id if isinstance(v, Rule) else "",
)
def test_example_matches_through_the_whole_pipeline(rule: Rule, example: str) -> None:
    line, _, after = example.partition("\n")  # a rule with ``next``: the line, then its follower
    assert bool(after) == bool(rule.next), "a rule with next patterns shows both lines"
    following = "\n".join(clean_line(raw.encode()) for raw in after.split("\n"))
    assert match_line(rule, clean_line(line.encode()), following) is not None
    explainer = Explainer()
    # a caught notice's example goes on with the exception its traceback ends with
    caught = (
        b'\n  File "x.py", line 1, in <module>\nImportError: caught\n' if rule.caught else b"\n"
    )
    explainer.feed("<example>", [example.encode() + caught])
    if rule.tail:  # read from the end of the log, and only when no other rule matched
        # a line that says the run finished well is no finding: the log is healthy
        want = [] if rule.ends_well else [rule.id]
        assert [d.rule for d in explainer.result().diagnoses] == want
        return
    assert any(a in line for a in rule.anchors), "no anchor in the example: prefilter skips it"
    if rule.caught:  # a notice is never shown, nor the exception its traceback ends with
        assert explainer.result().diagnoses == ()
        return
    assert rule.id in explainer.matches


def test_values_are_extracted() -> None:
    rule = next(r for r in RULES if r.id == "arch.capability-not-compatible")
    values = match_line(
        rule,
        "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
        "PyTorch installation.",
    )
    assert values == {"gpu_name": "NVIDIA GeForce RTX 5090", "arch": "sm_120"}


def _texts(rule: Rule) -> list[str]:
    return [rule.explanation, rule.fix, *rule.fix_context]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_fix_commands_do_what_they_say(rule: Rule) -> None:
    # mistakes an audit of the rules' advice found, kept from coming back:
    for text in _texts(rule):
        flat = " ".join(text.split())
        # `export X=... PATH=$X/bin:$PATH` expands $X before it is set: two exports are needed
        assert not re.search(r"export (\w+)=\S+ PATH=\$\1\b", flat), flat
        # `pip show` lists a package's requirements by name only, never a pinned version
        assert "pip show torch lists" not in flat, flat
        # --force-reinstall of a package refetches its torch from PyPI too, unless --no-deps
        for command in re.findall(
            r"pip install --force-reinstall(?:(?!pip )[^;()])*?<package>", flat
        ):
            assert "--no-deps" in command, command


@pytest.mark.parametrize(
    ("rule", "example"),
    [(r, e) for r in RULES for e in r.examples],
    ids=lambda v: v.id if isinstance(v, Rule) else "",
)
def test_example_renders_as_text(rule: Rule, example: str) -> None:
    # the diagnosis an example gets reads without leftovers of the templates
    explainer = Explainer(RULES)
    explainer.feed("example.log", [example.encode() + b"\n"])
    fields = {f for text in _texts(rule) for f in template_fields(text)}
    for diagnosis in explainer.result().diagnoses:
        for text in (diagnosis.explanation, diagnosis.fix):
            assert not [f for f in fields if "{" + f + "}" in text], text


_BASE = """
[[rule]]
id = "t.base"
category = "other"
title = "Base"
anchors = ["boom"]
patterns = ['boom (?P<what>\\w+)']
explanation = "it went {what}"
fix = "fix {what}"
source = "https://example.org/1"
"""


def _with_second_rule(extra: str) -> str:
    """_BASE and a rule that reads 'bang', with ``extra`` keys (its text_of, or its own text)."""
    return _BASE + (
        f'\n[[rule]]\nid = "t.other-line"\n{extra}\ncategory = "other"\nanchors = ["bang"]\n'
        "patterns = ['bang (?P<what>\\w+)']\nsource = \"https://example.org/2\"\n"
    )


def test_text_of_takes_the_named_rules_words() -> None:
    from torchsmith.explain.rules import parse_family  # noqa: PLC0415

    base, other = parse_family("t", _with_second_rule('text_of = "t.base"'))
    assert (other.title, other.explanation, other.fix) == (base.title, base.explanation, base.fix)
    assert other.source == "https://example.org/2"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('text_of = "t.none"', "names no rule"),
        ("text_of = 3", "names no rule"),
        ('text_of = "t.base"\nfix = "own"', "do not give them again"),
    ],
)
def test_text_of_refuses_a_missing_rule_or_a_second_text(extra: str, message: str) -> None:
    from torchsmith.errors import KnowledgeError  # noqa: PLC0415
    from torchsmith.explain.rules import parse_family  # noqa: PLC0415

    with pytest.raises(KnowledgeError, match=message):
        parse_family("t", _with_second_rule(extra))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('unless = ["no_such_check:what,what"]', "must read"),
        ('unless = ["runs_built_cubin"]', "must read"),
        ('unless = ["runs_built_cubin:what"]', "not its captures"),
        ('unless = ["runs_built_cubin:what,max"]', "not its captures"),
    ],
)
def test_unless_names_a_known_check_over_captured_values(extra: str, message: str) -> None:
    from torchsmith.errors import KnowledgeError  # noqa: PLC0415
    from torchsmith.explain.rules import parse_family  # noqa: PLC0415

    with pytest.raises(KnowledgeError, match=message):
        parse_family("t", _BASE.replace('source = "', extra + '\nsource = "'))


@pytest.mark.parametrize("extra", ["symptom = true", "generic = true", "tail = true"])
def test_a_caught_notice_is_an_anchored_line(extra: str) -> None:
    from torchsmith.errors import KnowledgeError  # noqa: PLC0415
    from torchsmith.explain.rules import parse_family  # noqa: PLC0415

    rule = _BASE.replace('source = "', f'caught = ["ImportError"]\n{extra}\nsource = "')
    if extra == "tail = true":  # a tail rule has no anchors
        rule = rule.replace('anchors = ["boom"]', "anchors = []")
    with pytest.raises(KnowledgeError, match="caught notice"):
        parse_family("t", rule)


def test_no_such_pytorch_index_knows_the_variants_the_knowledge_base_knows() -> None:
    # install.no-such-pytorch-index calls cu131 a variant that does not exist: its list of the
    # variants from cu117 on must be the knowledge base's, or a new index would be called missing
    kb = load_knowledge()
    known = {
        w.variant for w in kb.wheels if w.variant.startswith("cu") and int(w.variant[2:]) >= 117
    }
    (rule,) = [r for r in load_rules() if r.id == "install.no-such-pytorch-index"]
    listed = re.search(r"\(\?!\(\?:([\d|]+)\)", rule.patterns[1].pattern)
    assert listed is not None
    assert {f"cu{v}" for v in listed.group(1).split("|")} == known
    for variant in sorted(known):
        assert not any(p.search(f"download.pytorch.org/whl/{variant}") for p in rule.patterns)
    for variant in ("cu122", "cu131", "cu12", "cu12.6"):
        assert any(p.search(f"download.pytorch.org/whl/{variant} ") for p in rule.patterns)
