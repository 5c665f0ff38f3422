"""The rule files: one TOML file per family under ``rules/``, read once and validated.

A rule names the literal ``anchors`` a matching line must contain (the fast prefilter), the
``patterns`` that confirm it and capture values (named groups), ``require`` patterns that must all
be found in the line as well (a general rule: a subject such as a library name, and a failure verb,
in any order), ``next`` patterns one of which must be found in the next few non-blank lines, joined
by newlines (a statement and its printed result: ``torch.cuda.is_available()`` then ``False``; use
``(?m)^...$`` for a whole line), ``next_values`` patterns read from the same lines when they are
there, ``unless`` checks over the values read (``derive.CHECKS``: a GPU that runs the code built for
the top capability torch names), ``exclude`` patterns that veto it, and ``explanation`` / ``fix``
templates filled with those values. ``fix_context`` templates are tried first and used when every
field they name is known (from the log or from the machine's probe). Every rule has a ``source``
(a public report of the failure) and ``examples`` (real log lines that must match it).

A ``tail`` rule has no anchors: it is matched only against the last few non-blank lines of each log
(the error a run ended with) and is shown only when no other rule matched, so a log that ends in an
error nothing recognises is reported as a failure, not as healthy. A tail rule marked ``ends_well``
(pip's "Successfully installed ...", a torch.utils.collect_env report) says the run finished: errors
printed before it are not how it ended. A rule that ``overrides`` other rule ids cancels their
matches in the same run (torch's old-GPU warning naming an AMD GPU on a ROCm build makes the
warning's own rule misleading). A rule that ``refutes`` other rule ids cancels them when, in every
log where they matched, its own last match comes after their last one: a later line that shows the
opposite (llama.cpp offloading layers to the GPU below an app's "No GPUs detected"); a failure after
it still stands. It is never shown itself, and neither it nor the rules it names may be tail rules.
A rule with ``caught = [exception names]`` is a program's notice that it caught one of those
exceptions and went on (xformers' "A matching Triton is not available", with ``next`` requiring the
traceback it prints): it is never shown, and no rule reads the exception line that traceback ends
with (the first exception line the scanner marks within ``engine.CAUGHT_LINES`` below the notice,
when it names one of those exceptions; a chained traceback's next one too), which would read as the
error the run stopped on.
A rule with ``text_of = "<id>"`` reads the same cause from other lines and says it in the words of
that rule of the same file (its title, explanation, fix, fix_context and defaults).
A ``fix_windows`` text replaces ``fix`` for a log from Windows where the fix's commands have no
Windows form that ``explain/shell.py`` can write (deleting a cache folder: ``rm -rf ~/.cache/...``).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from torchsmith.errors import KnowledgeError
from torchsmith.explain import regex_safety
from torchsmith.explain.derive import CHECKS
from torchsmith.taxonomy import CATEGORIES, SEVERITY_ORDER, Category, Severity
from torchsmith.util.toml import TOMLDecodeError, loads_toml

# Fields the machine context can supply to fix templates (see explain/context.py).
CONTEXT_FIELDS = frozenset(
    {
        "gpu_name",
        "gpu_cc",
        "gpu_sm",
        "ram_gb",
        "max_jobs",
        "cpu_count",
        "os",
        "python_version",
        "torch_version",
        "torch_cuda",
        "driver_version",
        "driver_cuda",
        "nvcc_version",
        "wheel_variant",
        "index_url",
    }
)

_SHARED_TEXT = ("title", "explanation", "fix", "fix_context", "fix_windows", "defaults")
_REQUIRED = ("id", "category", "title", "anchors", "patterns", "explanation", "fix", "source")
_KNOWN_KEYS = frozenset(
    {
        *_REQUIRED,
        "priority",
        "severity",
        "symptom",
        "exclude",
        "fix_context",
        "fix_windows",
        "examples",
        "defaults",
        "params",
        "notes",
        "generic",
        "derive",
        "next_values",
        "unless",
        "corroborate",
        "require",
        "next",
        "tail",
        "overrides",
        "refutes",
        "ends_well",
        "last_line",
        "caught",
    }
)


@dataclass(frozen=True)
class Rule:
    id: str
    family: str
    category: Category
    title: str
    anchors: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]
    explanation: str
    fix: str
    source: str
    priority: int = 50
    severity: Severity = "error"
    symptom: bool = False
    generic: bool = False  # a catch-all (first compile error): shown only when no specific cause is
    # an informational line that is no failure on its own: reported only when another rule matched
    corroborate: bool = False
    exclude: tuple[re.Pattern[str], ...] = ()
    # every one of these must also be found in the line, anywhere (a subject and a failure verb
    # in either order: the general form of a family instead of one phrasing each)
    require: tuple[re.Pattern[str], ...] = ()
    # one of these must be found in the next few non-blank lines (examples: the line, "\n", them)
    next: tuple[re.Pattern[str], ...] = ()
    # searched in the same next lines, without being required: their named groups add values
    next_values: tuple[re.Pattern[str], ...] = ()
    # checks over the values read that veto the match: (function, (field, ...)), derive.CHECKS
    unless: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # matched only against the last TAIL_LINES non-blank lines of a log, when nothing else matched
    tail: bool = False
    # a tail rule whose line means the run finished well ("Successfully installed ..."): an error
    # printed before it is not how the run ended
    ends_well: bool = False
    # a tail rule that reads only the log's very last non-blank line (pip still retrying where the
    # log stops: a retry with more lines after it went on)
    last_line: bool = False
    # a notice that the program caught one of these exceptions and went on: never shown; no rule
    # reads the exception line of the traceback printed with it
    caught: tuple[str, ...] = ()
    # rule ids this one cancels when it matched in the same run (a line that shows another rule's
    # evidence is misleading here: torch's capability warning on a ROCm build)
    overrides: tuple[str, ...] = ()
    # rule ids this one cancels when, in every log where they matched, its last match comes after
    # theirs: a later line that shows the opposite of their evidence (never shown itself)
    refutes: tuple[str, ...] = ()
    fix_context: tuple[str, ...] = ()
    fix_windows: str = ""  # the fix for a log from Windows, where ``fix`` has POSIX-only commands
    examples: tuple[str, ...] = ()
    defaults: dict[str, str] = field(default_factory=dict)
    params: dict[str, float] = field(default_factory=dict)
    derive: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (function, field)

    @property
    def captures(self) -> frozenset[str]:
        patterns = (*self.patterns, *self.next, *self.next_values)
        return frozenset(name for p in patterns for name in p.groupindex)

    @property
    def reads_after(self) -> bool:
        """Whether matching reads the next few non-blank lines."""
        return bool(self.next or self.next_values)


def template_fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


@lru_cache(maxsize=1)
def load_rules() -> tuple[Rule, ...]:
    """Every shipped rule, in file then declaration order. Raises KnowledgeError when invalid."""
    rules: list[Rule] = []
    for family, data in _files():
        rules.extend(parse_family(family, data))
    _check_unique(rules)
    return tuple(rules)


@lru_cache(maxsize=1)
def load_tables() -> dict[str, dict[str, str]]:
    """Lookup tables (``[tables.<name>]``) that ``derive`` functions may name; each has a source."""
    tables: dict[str, dict[str, str]] = {}
    for family, data in _files():
        for name, table in dict(data.get("tables", {})).items():
            if not isinstance(table, dict) or "source" not in table:
                raise KnowledgeError(f"explain rules {family}.toml: table {name} needs a source")
            tables[str(name)] = {str(k): str(v) for k, v in table.items() if k != "source"}
    return tables


def _files() -> list[tuple[str, dict[str, Any]]]:
    folder = resources.files("torchsmith.explain").joinpath("rules")
    out = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            family = entry.name[: -len(".toml")]
            out.append((family, _load(family, entry.read_text("utf-8"))))
    return out


def _load(family: str, text: str) -> dict[str, Any]:
    try:
        return loads_toml(text)
    except TOMLDecodeError as exc:
        raise KnowledgeError(f"explain rules {family}.toml: {exc}") from None


def parse_family(family: str, data: dict[str, Any] | str) -> list[Rule]:
    """The rules of one family file (its parsed TOML, or its text)."""
    if isinstance(data, str):
        data = _load(family, data)
    items = data.get("rule", [])
    if not isinstance(items, list):
        raise KnowledgeError(f"explain rules {family}.toml: [[rule]] must be an array of tables")
    return [_parse_rule(family, item) for item in _with_shared_texts(family, items)]


def _with_shared_texts(family: str, items: list[Any]) -> list[Any]:
    """Rules that read the same cause from other lines say it once: ``text_of = "<id>"`` takes
    the title, explanation, fix, fix_context and defaults of that rule of the same file."""
    by_id = {item.get("id"): item for item in items if isinstance(item, dict)}
    out = []
    for item in items:
        if not isinstance(item, dict) or "text_of" not in item:
            out.append(item)
            continue
        where = f"explain rules {family}.toml, rule {item.get('id', '?')}"
        name = item["text_of"]
        base = by_id.get(name) if isinstance(name, str) else None
        if base is None or "text_of" in base:
            raise KnowledgeError(f"{where}: text_of names no rule of this file with its own text")
        given = sorted(set(item) & set(_SHARED_TEXT))
        if given:
            raise KnowledgeError(f"{where}: text_of gives {given}; do not give them again")
        shared = {key: base[key] for key in _SHARED_TEXT if key in base}
        out.append({**shared, **{k: v for k, v in item.items() if k != "text_of"}})
    return out


def _parse_rule(family: str, raw: Any) -> Rule:
    where = f"explain rules {family}.toml"
    if not isinstance(raw, dict):
        raise KnowledgeError(f"{where}: every [[rule]] must be a table")
    rid = str(raw.get("id", "?"))
    where = f"{where}, rule {rid}"
    missing = [key for key in _REQUIRED if key not in raw]
    unknown = sorted(set(raw) - _KNOWN_KEYS)
    if missing or unknown:
        raise KnowledgeError(f"{where}: missing {missing} / unknown keys {unknown}")
    if raw["category"] not in CATEGORIES:
        raise KnowledgeError(f"{where}: unknown category {raw['category']!r}")
    severity = raw.get("severity", "error")
    if severity not in SEVERITY_ORDER:
        raise KnowledgeError(f"{where}: unknown severity {severity!r}")
    if not str(raw["source"]).startswith("https://"):
        raise KnowledgeError(f"{where}: source must be an https URL")
    tail = bool(raw.get("tail", False))
    anchors = _strings(raw["anchors"], where, "anchors", empty=tail)
    if tail and anchors:
        raise KnowledgeError(f"{where}: a tail rule reads the end of the log, not anchored lines")
    if (raw.get("ends_well") or raw.get("last_line")) and not tail:
        raise KnowledgeError(f"{where}: ends_well and last_line are for tail rules (the log's end)")
    if raw.get("caught") and (tail or raw.get("symptom") or raw.get("generic")):
        raise KnowledgeError(f"{where}: a caught notice is an anchored line, not a symptom or tail")
    rule = Rule(
        id=rid,
        family=family,
        category=raw["category"],
        title=str(raw["title"]),
        anchors=anchors,
        patterns=_compile(_strings(raw["patterns"], where, "patterns"), where),
        explanation=str(raw["explanation"]).strip(),
        fix=str(raw["fix"]).strip(),
        source=str(raw["source"]),
        priority=int(raw.get("priority", 50)),
        severity=severity,
        symptom=bool(raw.get("symptom", False)),
        generic=bool(raw.get("generic", False)),
        corroborate=bool(raw.get("corroborate", False)),
        exclude=_compile(_strings(raw.get("exclude", []), where, "exclude", empty=True), where),
        require=_compile(_strings(raw.get("require", []), where, "require", empty=True), where),
        next=_compile(_strings(raw.get("next", []), where, "next", empty=True), where),
        next_values=_compile(
            _strings(raw.get("next_values", []), where, "next_values", empty=True), where
        ),
        unless=_unless(raw.get("unless", []), where),
        tail=tail,
        ends_well=bool(raw.get("ends_well", False)),
        last_line=bool(raw.get("last_line", False)),
        caught=_strings(raw.get("caught", []), where, "caught", empty=True),
        overrides=_strings(raw.get("overrides", []), where, "overrides", empty=True),
        refutes=_strings(raw.get("refutes", []), where, "refutes", empty=True),
        fix_context=tuple(
            t.strip() for t in _strings(raw.get("fix_context", []), where, "fix_context", True)
        ),
        fix_windows=str(raw.get("fix_windows", "")).strip(),
        examples=_strings(raw.get("examples", []), where, "examples", empty=True),
        defaults={str(k): str(v) for k, v in dict(raw.get("defaults", {})).items()},
        params={str(k): float(v) for k, v in dict(raw.get("params", {})).items()},
        derive=_derive(raw.get("derive", {}), where),
    )
    _check_templates(rule, where)
    return rule


def _derive(raw: Any, where: str) -> dict[str, tuple[str, str]]:
    if not isinstance(raw, dict):
        raise KnowledgeError(f'{where}: derive must be a table of name = "function:field"')
    out: dict[str, tuple[str, str]] = {}
    for name, spec in raw.items():
        function, _, source = str(spec).partition(":")
        if not source:
            raise KnowledgeError(f'{where}: derive {name} must read "function:field"')
        out[str(name)] = (function, source)
    return out


def _unless(raw: Any, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    out = []
    for spec in _strings(raw, where, "unless", empty=True):
        function, _, fields = spec.partition(":")
        if function not in CHECKS or not fields:
            raise KnowledgeError(f'{where}: unless {spec!r} must read "check:field,field"')
        out.append((function, tuple(fields.split(","))))
    return tuple(out)


def _strings(value: Any, where: str, key: str, empty: bool = False) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise KnowledgeError(f"{where}: {key} must be a list of non-empty strings")
    if not value and not empty:
        raise KnowledgeError(f"{where}: {key} must not be empty")
    return tuple(value)


def _compile(patterns: tuple[str, ...], where: str) -> tuple[re.Pattern[str], ...]:
    try:
        compiled = tuple(re.compile(p) for p in patterns)
    except re.error as exc:
        raise KnowledgeError(f"{where}: bad pattern: {exc}") from None
    for pattern in patterns:  # every pattern must search a line in linear time
        found = regex_safety.problems(pattern)
        if found:
            raise KnowledgeError(f"{where}: pattern {pattern!r} can backtrack: {found[0]}")
    return compiled


def _check_templates(rule: Rule, where: str) -> None:
    known = rule.captures | set(rule.defaults) | set(rule.derive)
    if "build_jobs" in rule.params:
        known |= {"max_jobs", "job_gb"}
    for template in (rule.explanation, rule.fix, rule.fix_windows):
        unknown = template_fields(template) - known
        if unknown:
            raise KnowledgeError(f"{where}: template names {sorted(unknown)}, not captured")
    for source_field in (f for _, f in rule.derive.values()):
        if source_field not in rule.captures:
            raise KnowledgeError(f"{where}: derive reads {source_field!r}, not captured")
    for function, fields in rule.unless:
        if len(fields) != CHECKS[function][0] or set(fields) - rule.captures:
            raise KnowledgeError(f"{where}: unless {function} reads {fields}, not its captures")
    for template in rule.fix_context:
        unknown = template_fields(template) - known - CONTEXT_FIELDS
        if unknown:
            raise KnowledgeError(f"{where}: fix_context names unknown {sorted(unknown)}")


def _check_unique(rules: list[Rule]) -> None:
    seen: set[str] = set()
    tails = {r.id for r in rules if r.tail}
    for rule in rules:
        if rule.id in seen:
            raise KnowledgeError(f"explain rules: duplicate rule id {rule.id!r}")
        seen.add(rule.id)
    for rule in rules:
        for key, named in (("overrides", rule.overrides), ("refutes", rule.refutes)):
            unknown = set(named) - seen
            if unknown:
                raise KnowledgeError(f"explain rules: {rule.id} {key} unknown {sorted(unknown)}")
        if rule.refutes and (rule.tail or set(rule.refutes) & tails):
            raise KnowledgeError(f"explain rules: {rule.id}: refutes is for line rules, not tail")
