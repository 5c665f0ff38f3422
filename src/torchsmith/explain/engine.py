"""Match, merge and rank: turn prefilter hits into diagnoses, root cause first."""

from __future__ import annotations

import io
import os
import re
import stat
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from torchsmith.explain import parallel
from torchsmith.explain.derive import derive_values, vetoed
from torchsmith.explain.model import (
    Basis,
    Diagnosis,
    ExplainResult,
    InputSummary,
    summary_line,
)
from torchsmith.explain.normalize import clean_line
from torchsmith.explain.reader import Stream, chunks, open_log, sniff_encoding
from torchsmith.explain.rules import Rule, load_rules, load_tables, template_fields
from torchsmith.explain.scanner import NEXT_LINES, Hit, Scanner
from torchsmith.explain.shell import Platform, for_windows, marks, platform_of
from torchsmith.knowledge.build_facts import load_build_facts
from torchsmith.util.progress import ByteProgress, offset

MAX_EVIDENCE = 3
TAIL_LINES = 15  # ``tail`` rules read this many non-blank lines at the end of each log
# a ``caught`` notice's traceback ends with the first exception line within this many lines below
CAUGHT_LINES = 60
_EXCEPTION_LINE = re.compile(
    r"^\s*(?:[\w.]{0,200}\.)?(?P<kind>[A-Za-z_]\w{0,100}(?:Error|Exception))\b"
)
# the line after an exception that says its traceback goes on with another one
_CHAINED = re.compile(
    r"^\s*(?:During handling of the above exception|The above exception was the direct cause)"
)

# The lines of a Python traceback that come before its exception line: the header, a frame, and
# (under a frame) the frame's source line and Python 3.11's carets below it.
_TRACEBACK_HEADER = re.compile(r"^\s*Traceback \(most recent call last\):\s*$")
_FRAME = re.compile(r'^\s*File "[^"]{1,1000}", line \d{1,7}(?:, in \S{1,200})?\s*$')
_CARETS = re.compile(r"^\s*[~^]{1,400}\s*$")
# a last line where the copy stopped inside a frame ('  File "/usr/lib/py', '  File "/x.py", li'):
# the path, or after it a beginning of ', line N, in name'
_CUT_FRAME = re.compile(
    r'^\s*File "(?:[^"]{0,1000}|[^"]{1,1000}"(?:,(?: ?(?:l|li|lin|line(?: \d{0,7}'
    r"(?:,(?: (?:i|in(?: \S{0,200})?)?)?)?)?))?)?)$"
)
# how a run is stopped by hand or by a signal, printed below its last line: ^C, pip's "Operation
# cancelled by user", Python's bare KeyboardInterrupt, the shell's "Terminated"
_INTERRUPTED = re.compile(
    r"^\s*(?:\^C.{0,200}|KeyboardInterrupt|Terminated|ERROR: Operation cancelled by user)\s*$"
)


@dataclass
class _Match:
    rule: Rule
    file: str
    line: int
    text: str
    values: dict[str, str]
    count: int = 1
    order: int = 0  # position across all inputs, for "first error wins"


class _Values(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "?"


def match_line(rule: Rule, text: str, after: str = "") -> dict[str, str] | None:
    """The values ``rule`` reads from ``text`` (and from ``after``, the next few non-blank lines
    joined by newlines, for a rule with ``next`` patterns), or None when it does not match."""
    matched = _match(rule, text, after)
    return None if matched is None else matched[0]


def _match(
    rule: Rule, text: str, after: str, need_next: bool = True
) -> tuple[dict[str, str], str] | None:
    """:func:`match_line`'s values, with the evidence to show: ``text``, and for a ``next`` rule
    the following line that completed it (not looked for when ``need_next`` is False)."""
    for pattern in rule.patterns:
        found = pattern.search(text)
        if found is None:
            continue
        if any(ex.search(text) for ex in rule.exclude):
            return None
        if not all(req.search(text) for req in rule.require):
            return None
        values = {k: v for k, v in found.groupdict().items() if v is not None}
        # read on after the match in the same line first: a log shipper's one-line record
        rest = text[found.end() :] + "\n" + after if rule.next_values else after
        for extra in filter(None, (p.search(rest) for p in rule.next_values)):
            values.update({k: v for k, v in extra.groupdict().items() if v is not None})
        if not rule.next or not need_next:
            return None if vetoed(rule.unless, values) else (values, text)
        # every following line a next pattern matches, in order: the first the unless checks let
        # through decides (a package list's second companion may be the one of another build)
        for following in (m for p in rule.next for m in p.finditer(after)):
            found_values = values | {
                k: v for k, v in following.groupdict().items() if v is not None
            }
            if not vetoed(rule.unless, found_values):
                return found_values, f"{text} -> {_line_at(after, following)}"
        return None
    return None


def _opens(rule: Rule, text: str, after_raw: bytes, after: str) -> bool:
    """Whether a ``caught`` rule's notice is on ``text``: its pattern, and its ``next`` in the
    lines after it, unless those were cut by the end of the scanner's chunk or of the log (fewer
    than NEXT_LINES): then the notice opens anyway, its exception names deciding what it caught."""
    short = not after_raw or after_raw.count(b"\n") + 1 < NEXT_LINES
    return _match(rule, text, after, need_next=not short) is not None


def _line_at(text: str, found: re.Match[str]) -> str:
    """The line of ``text`` where ``found`` ends (a pattern may read lines before it)."""
    pos = max(found.start(), found.end() - 1)
    end = text.find("\n", pos)
    return text[text.rfind("\n", 0, pos) + 1 : end if end != -1 else len(text)].strip()


class Explainer:
    """Reads logs one after another and keeps the first match of every rule."""

    def __init__(self, rules: Sequence[Rule] | None = None) -> None:
        self.rules = tuple(load_rules() if rules is None else rules)
        self.scanner = Scanner(self.rules)
        self.matches: dict[str, _Match] = {}
        self.tails: list[_Match] = []  # per input, the last line a ``tail`` rule matched
        self._tail_rules = tuple(r for r in self.rules if r.tail)
        self._refuting = tuple(r for r in self.rules if r.refutes)
        self.inputs: list[InputSummary] = []
        # the input being read: caught notices whose traceback has not ended yet (their line and the
        # exceptions they catch), and the exception lines those tracebacks ended with (no rule reads
        # them)
        self._open_notices: list[tuple[int, tuple[str, ...]]] = []
        self._caught_lines: set[int] = set()
        self._order = 0
        # the last line each rule matched in each input, for ``refutes``: (input, rule id) -> line
        self._last: dict[tuple[str, str], int] = {}
        self._marks = [0, 0]  # Windows and POSIX path marks in the inputs' tails (shell.py)

    def feed(self, name: str, data: Iterable[bytes], encoding: str = "utf-8") -> None:
        self._consume(name, self.scanner.scan(data), encoding)

    def feed_stream(self, stream: Stream, done: Callable[[int], None] | None = None) -> None:
        """Read one log; ``done`` is told the bytes of it read so far, now and then."""
        if parallel.eligible(stream):
            hits = parallel.scan_stream(self.scanner, stream, done)
        else:
            hits = self.scanner.scan(_counted(stream, done) if done else chunks(stream))
        self._consume(stream.name, hits, stream.encoding)

    def _consume(self, name: str, hits: Iterable[Hit], encoding: str) -> None:
        self._open_notices, self._caught_lines = [], set()
        for hit in hits:
            text = clean_line(hit.raw)
            if self._open_notices:
                caught = self._ends_caught(hit.line, text)
                if caught is not None:  # the exception a notice above says the program caught
                    if _CHAINED.match(clean_line(hit.after.split(b"\n", 1)[0])):
                        self._open_notices.append((hit.line, caught))  # and the next one too
                    continue
            after: str | None = None
            for index in hit.rules:
                rule = self.rules[index]
                if rule.reads_after and after is None:
                    after = "\n".join(clean_line(raw) for raw in hit.after.split(b"\n"))
                if rule.caught:
                    if _opens(rule, text, hit.after, after or ""):
                        self._open_notices.append((hit.line, rule.caught))
                    continue
                matched = _match(rule, text, after or "")
                if matched is None:
                    continue
                values, shown = matched
                self._record(rule, name, hit.line, shown, values)
        size, lines, tail = self.scanner.last_size, self.scanner.last_lines, self.scanner.last_tail
        complete = len(tail) == size
        self._count_marks(tail)
        self._match_tail(name, tail, lines, complete=complete)
        cut = traceback_cut_at(tail, lines, complete=complete)
        self.inputs.append(InputSummary(name, encoding, size, lines, traceback_cut_at=cut))

    def _match_tail(self, name: str, tail: bytes, lines: int, complete: bool) -> None:
        """Match the ``tail`` rules against the last TAIL_LINES non-blank lines of an input: the
        last line one of them matches is the error the run ended with, unless it is a line that
        says the run finished well (``ends_well``). A caught exception (``_ends_caught``) is
        skipped; a notice whose traceback's exception line no anchor marked is ended here, reading
        the tail top down as the hits came."""
        if not self._tail_rules:
            return
        real = 0  # lines with text, not counting an interrupt's (^C, Terminated) below the last one
        read: Iterable[tuple[int, bytes]] = last_lines(tail, lines, complete)
        if self._open_notices:
            read = list(read)
            for line, raw in reversed(read):
                if self._open_notices and line not in self._caught_lines:
                    self._ends_caught(line, clean_line(raw))
        for seen, (line, raw) in enumerate(read, 1):
            if seen > TAIL_LINES:
                return
            text = clean_line(raw)
            if not text.strip() or line in self._caught_lines:
                continue  # a colour reset or other control sequence alone; a caught exception
            if not _INTERRUPTED.match(text):
                real += 1
            for rule in self._tail_rules:
                if rule.last_line and real != 1:
                    continue
                values = match_line(rule, text)
                if values is not None:
                    if rule.ends_well:
                        return  # the run went on to finish well after any error above
                    self._order += 1
                    self.tails.append(_Match(rule, name, line, text, values, order=self._order))
                    return

    def _ends_caught(self, line: int, text: str) -> tuple[str, ...] | None:
        """The exceptions of the caught notice whose traceback ``line`` ends as one of them, or
        None. The first exception line within CAUGHT_LINES below open notices ends them all; it
        is a caught exception only when it names one a notice catches (another is another
        program's traceback, read as usual). A notice with no exception line in reach is dropped."""
        self._open_notices = [(n, k) for n, k in self._open_notices if line <= n + CAUGHT_LINES]
        above = [kinds for n, kinds in self._open_notices if n < line]
        found = _EXCEPTION_LINE.match(text)
        if not above or found is None:
            return None
        self._open_notices = [(n, k) for n, k in self._open_notices if n >= line]
        for kinds in above:
            if found.group("kind") in kinds:
                self._caught_lines.add(line)
                return kinds
        return None

    def _count_marks(self, data: bytes) -> None:
        windows, posix = marks(data)
        self._marks[0] += windows
        self._marks[1] += posix

    def _record(self, rule: Rule, name: str, line: int, text: str, values: dict[str, str]) -> None:
        self._last[(name, rule.id)] = line
        known = self.matches.get(rule.id)
        if known is None:
            self._count_marks(text.encode("utf-8", "replace"))
            self._order += 1
            self.matches[rule.id] = _Match(rule, name, line, text, values, order=self._order)
            return
        known.count += 1
        for key, value in values.items():
            known.values.setdefault(key, value)

    def refuted(self) -> frozenset[str]:
        """Rule ids that a ``refutes`` rule's later line showed wrong in every input they matched
        in (a failure after that line, or in another input, keeps them)."""
        return _refuted_ids(self._refuting, self._last)

    def result(
        self, context: Mapping[str, str] | None = None, source: str | None = None
    ) -> ExplainResult:
        cut_files = {i.name for i in self.inputs if i.traceback_cut_at}
        cut = bool(cut_files)
        groups = rank(
            [*self.matches.values(), *self.tails], cut_files=cut_files, refuted=self.refuted()
        )
        context = context or {}
        windows, posix = self._marks
        platform = platform_of(windows, posix, machine_os=context.get("os"))
        diagnoses = [_diagnosis(group, context, platform) for group in groups]
        total = sum(i.lines for i in self.inputs)
        return ExplainResult(
            diagnoses=tuple(diagnoses),
            healthy=not diagnoses and not cut,
            summary=summary_line(diagnoses, total, cut=cut, logs=len(self.inputs)),
            inputs=tuple(self.inputs),
            context=source,
            fixes_for=platform,
        )


def _refuted_ids(rules: Iterable[Rule], last: Mapping[tuple[str, str], int]) -> frozenset[str]:
    """The rule ids whose evidence later lines refute: in every input where such a rule matched,
    its last match comes before the last line of a rule that ``refutes`` it."""
    refuted = set()
    for rule in rules:
        for target in rule.refutes:
            inputs = [name for name, rid in last if rid == target]
            if inputs and all(
                last.get((name, rule.id), 0) > last[(name, target)] for name in inputs
            ):
                refuted.add(target)
    return frozenset(refuted)


def last_lines(tail: bytes, lines: int, complete: bool = True) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines at the end of an input, last first, with their 1-based line numbers.
    ``tail`` is the input's last bytes and ``lines`` its line count; ``complete``: ``tail`` is the
    whole input (otherwise its first piece may begin inside a line, and is skipped)."""
    raws = tail.split(b"\n")
    if raws and not raws[-1]:
        raws.pop()  # the input ended with a newline
    kept = raws if complete else raws[1:]
    for back, raw in enumerate(reversed(kept)):
        if raw.strip():
            yield lines - back, raw


def traceback_cut_at(tail: bytes, lines: int, complete: bool = True) -> int:
    """The line where a log ends inside a Python traceback, before the exception line that every
    traceback ends with, or 0 (arguments as for ``last_lines``). Read back from the end, the lines
    must be frames (the last may stop inside its path), each with an optional source line and
    3.11's carets below it, up to the traceback's header: a stack a program prints on purpose
    (traceback.print_stack, logging's stack_info) has no header, and a log whose last traceback
    ends in its exception is whole."""
    end = source = 0  # source: the indent of the line below, when it must be a frame's source line
    state = "frame"  # what was read last: a frame (or nothing yet), carets, or a source line
    for line, raw in last_lines(tail, lines, complete):
        last = not end
        end = end or line
        text = clean_line(raw)
        if _TRACEBACK_HEADER.match(text):
            return end if state == "frame" else 0
        if _FRAME.match(text) or (last and _CUT_FRAME.match(text)):
            if state == "source" and source <= _indent(text):
                return 0  # the line below is not indented under this frame: an exception line
            state = "frame"
        elif state == "source" or (state == "carets" and _CARETS.match(text)):
            return 0  # the line below had to be a frame's source line, and this is no frame
        elif _CARETS.match(text):
            state = "carets"
        else:
            state, source = "source", _indent(text)  # a frame must come next
    return 0


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _key(match: _Match) -> tuple[int, int]:
    return (-match.rule.priority, match.order)


def rank(
    matches: Iterable[_Match], cut_files: Collection[str] = (), refuted: Collection[str] = ()
) -> list[list[_Match]]:
    """Group matches into problems, most likely root cause first.

    Specific root causes win; generic ones (the first compile error) are shown only when no
    specific rule matched, symptoms ("ninja: build stopped") only when nothing else did, and the
    error a log ends with (``tail`` rules) only when no other rule matched at all. Within a level:
    higher rule priority first, then the earlier evidence (the first real error in a compile log
    beats the cascade after it). Matches of one category are one problem: the best rule leads and
    the others are listed as related. A ``corroborate`` rule (an informational line such as "No
    CUDA runtime is found") counts only when the log failed: some other rule matched too, it ends
    in an error, or its own input was cut inside a traceback (``cut_files``: the run was raising an
    exception where the text stops). Alone, the log is of a run that went on. A rule that
    ``overrides`` others cancels their matches: its line shows their evidence is misleading here.
    ``refuted`` rule ids (Explainer.refuted: later lines showed the opposite) are cancelled too, and
    a rule that ``refutes`` others is never a diagnosis itself.
    """
    ordered = sorted(matches, key=_key)
    cancelled = {rid for m in ordered for rid in m.rule.overrides} | set(refuted)
    ordered = [m for m in ordered if m.rule.id not in cancelled and not m.rule.refutes]
    lines = [m for m in ordered if not m.rule.tail]
    ended_in_error = [m for m in ordered if m.rule.tail]
    if all(m.rule.corroborate for m in lines) and not ended_in_error:
        # only a line of the input that stops inside a traceback speaks for that failure (its
        # evidence and values are that input's: a rule first seen in another input stays out)
        lines = [m for m in lines if m.file in cut_files]
        if not lines:
            return []
    causes = [m for m in lines if not m.rule.symptom and not m.rule.generic]
    generic = [m for m in lines if m.rule.generic and not m.rule.symptom]
    symptoms = [m for m in lines if m.rule.symptom]
    chosen = causes or generic or symptoms or ended_in_error
    groups: dict[str, list[_Match]] = {}
    for match in chosen:
        groups.setdefault(match.rule.category, []).append(match)
    return list(groups.values())


def basis_of(rule: Rule) -> Basis:
    """What a diagnosis led by ``rule`` rests on (model.BASES)."""
    if rule.tail:
        return "ended-in-error"
    if rule.symptom:
        return "symptom"
    return "generic" if rule.generic else "cause"


def _diagnosis(
    group: list[_Match], context: Mapping[str, str], platform: Platform = "posix"
) -> Diagnosis:
    lead, others = group[0], group[1:]
    rule = lead.rule
    values = {**lead.values}
    for other in others:
        for key, value in other.values.items():
            values.setdefault(key, value)
    values.update(derive_values(rule.derive, values, load_tables()))
    computed = dict(values)
    context = _same_gpu_context(values, context)
    ram = context.get("ram_gb")
    if ram and "build_jobs" in rule.params:
        # the one budget build, preflight, review and doctor advise MAX_JOBS from
        facts = load_build_facts()
        cuda = bool(rule.params["build_jobs"])
        computed["max_jobs"] = str(facts.jobs_that_fit(float(ram), cuda=cuda))
        computed["job_gb"] = f"{facts.job_gb(cuda):g}"
    filled = _Values({**rule.defaults, **computed})
    windows = platform == "windows"
    fix = (rule.fix_windows if windows and rule.fix_windows else rule.fix).format_map(filled)
    available = {**rule.defaults, **context, **computed}
    for template in rule.fix_context:
        if template_fields(template) <= set(available):
            fix = template.format_map(_Values(available))
            break
    if windows:
        fix = for_windows(fix)
    evidence = [lead.text]
    for other in sorted(others, key=lambda m: m.order):
        if len(evidence) < MAX_EVIDENCE and other.text not in evidence:
            evidence.append(other.text)
    return Diagnosis(
        category=rule.category,
        rule=rule.id,
        title=rule.title,
        severity=rule.severity,
        line=lead.line,
        evidence=tuple(evidence),
        explanation=rule.explanation.format_map(filled),
        fix=fix,
        file=lead.file,
        count=lead.count,
        symptom=rule.symptom,
        basis=basis_of(rule),
        values=values,
        related=tuple(m.rule.id for m in others),
        source=rule.source,
    )


_GPU_CONTEXT = ("gpu_name", "gpu_cc", "gpu_sm", "wheel_variant", "index_url")


def _same_gpu_context(values: Mapping[str, str], context: Mapping[str, str]) -> Mapping[str, str]:
    """The machine's GPU facts only where the log's GPU is that GPU: a log from another machine
    (its GPU named, or its sm_XY) must not get the probe's GPU (an RTX 5070 told it is sm_90)."""
    if not any(k in context for k in _GPU_CONTEXT):
        return context
    named, mine = values.get("gpu_name"), context.get("gpu_name")
    arch, my_sm = values.get("arch", ""), context.get("gpu_sm")
    other_name = bool(named and mine) and not _names_match(str(named), str(mine))
    other_arch = bool(arch.startswith("sm_") and my_sm) and arch.rstrip("a") != my_sm
    if not (other_name or other_arch):
        return context
    return {k: v for k, v in context.items() if k not in _GPU_CONTEXT}


def _names_match(a: str, b: str) -> bool:
    """Two GPU names for one model ("RTX 5070" and "NVIDIA GeForce RTX 5070")."""
    noise = {"nvidia", "geforce", "gpu", "graphics", "(tm)", "(r)"}
    words = [{w for w in n.lower().split() if w not in noise} for n in (a, b)]
    return bool(words[0] and words[1]) and (words[0] <= words[1] or words[1] <= words[0])


def explain_files(
    names: Sequence[str],
    context: Mapping[str, str] | None = None,
    context_source: str | None = None,
    rules: Sequence[Rule] | None = None,
    progress: ByteProgress | None = None,
) -> ExplainResult:
    """Diagnose the logs ``names`` ("-" is stdin). Raises InputError for unreadable inputs.
    ``progress`` is told the bytes read of the inputs' total size (a pipe has none: not told)."""
    explainer = Explainer(rules)
    streams = [open_log(name) for name in names]
    sizes = [_size(stream) for stream in streams]
    total, before = sum(sizes), 0
    for stream, size in zip(streams, sizes, strict=True):
        done = None
        if progress is not None and size:  # a pipe's bytes have no total to count against
            shown = "standard input" if stream.name == "-" else stream.name
            done = offset(progress, before, total, shown, size=size)
        explainer.feed_stream(stream, done)
        before += size
    return explainer.result(context, context_source)


def _size(stream: Stream) -> int:
    """The size of the regular file behind ``stream`` (standard input redirected from one too);
    0 for a pipe, a terminal or a stream without a file."""
    try:
        info = os.fstat(stream.handle.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


def _counted(stream: Stream, done: Callable[[int], None]) -> Iterator[bytes]:
    """The stream's chunks, telling ``done`` the bytes of the log behind them after each (not
    what the reader has read: it holds a chunk back)."""
    for chunk in chunks(stream):
        yield chunk
        done(stream.bytes_done)


def explain_text(
    text: str | bytes,
    context: Mapping[str, str] | None = None,
    rules: Sequence[Rule] | None = None,
    name: str = "<text>",
) -> ExplainResult:
    """Diagnose a log held in memory (tests, library callers)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    encoding, bom = sniff_encoding(data[:65536])
    stream = Stream(name, io.BytesIO(), encoding, data[bom:], close=True)
    explainer = Explainer(rules)
    explainer.feed_stream(stream)
    return explainer.result(context)
