"""Attempts from the ledger as tables, diffs and a publishable build log (Markdown or HTML).

The comparison people write by hand: :func:`flatten` turns one attempt into ``key -> value``
(environment, CMake -D values, arch list, toolkit, compiler, jobs, launcher, git commit, tool
versions, outcome); :func:`diff_attempts` names every key whose value differs. :func:`export_md`
writes every attempt (its full commands as a code block, what changed from the one before, how it
ended and why) and then the patterns across attempts. Everything here is pure except the Rich views.
"""

from __future__ import annotations

import html
import re
import shlex
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from torchsmith.binaries.archs import sort_archs
from torchsmith.knowledge.compat import entry_cc
from torchsmith.ledger import Attempt
from torchsmith.render.clean import human_bytes

_CONFIG_KEYS = (
    "profile",
    "python",
    "cuda_home",
    "cuda_version",
    "host_compiler",
    "jobs",
    "nvcc_threads",
    "cache",
    "launcher",
)
_OUTCOME_KEYS = ("outcome.status", "outcome.exit_code", "outcome.diagnosis", "outcome.archs")
_CAP = re.compile(r"\((\d+\.\d+)\)")


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ";".join(_text(v) for v in value)
    return str(value)


def diagnosis_line(attempt: Attempt) -> str:
    titles = [str(d.get("title") or d.get("rule") or "") for d in attempt.diagnoses]
    titles = [t for t in titles if t]
    if titles:
        return titles[0] + (f" (+{len(titles) - 1} more)" if len(titles) > 1 else "")
    result = attempt.result if isinstance(attempt.result, dict) else {}
    for key in ("reason", "error"):  # a build's or clean's reason; an install's error
        if result.get(key):
            return str(result[key])
    return ""


def kind_label(attempt: Attempt, *, short: bool = False) -> str:
    """The kind as people say it: a rollback is recorded as an install of the set before one
    (``short``: ``rollback #N``, for a table column)."""
    rollback_of = (attempt.config or {}).get("rollback_of")
    if attempt.kind == "install" and rollback_of is not None:
        return f"rollback #{rollback_of}" if short else f"install (rollback of #{rollback_of})"
    return attempt.kind


def archs_text(attempt: Attempt) -> str:
    """The GPU code in the result, SASS and PTX, in architecture order (sm_80 before sm_120)."""
    ptx = attempt.result.get("ptx") if isinstance(attempt.result, dict) else None
    names = [str(a) for a in attempt.archs]
    if isinstance(ptx, list):
        names += [str(a) for a in ptx]
    return ";".join(sort_archs(names))


def flatten(attempt: Attempt) -> dict[str, str]:
    """One attempt as ``key -> value`` text, the rows a diff compares."""
    config = attempt.config or {}
    flat: dict[str, str] = {}
    flat["project_kind"] = _text(attempt.project_kind)
    flat["tree"] = _text(attempt.tree)
    flat["arch_list"] = _text(config.get("arch_list"))
    for key in _CONFIG_KEYS:
        if key in config:
            flat[key] = _text(config[key])
    for name, value in sorted((config.get("env") or {}).items()):
        flat[f"env.{name}"] = _text(value)
    loose: list[str] = []
    for arg in config.get("cmake_args") or ():
        match = re.match(r"-D([^=:]+)(?::[A-Z]+)?=(.*)\Z", str(arg), re.S)
        if match:
            flat[f"cmake.{match.group(1)}"] = match.group(2)
        else:
            loose.append(str(arg))
    if loose:
        flat["cmake_args"] = " ".join(loose)
    for group, key in (("option", "options"), ("plan", "recommendation")):  # an install's
        section = config.get(key)
        for name, value in sorted(section.items() if isinstance(section, dict) else ()):
            if _text(value) and not (group == "plan" and isinstance(value, (dict, list))):
                flat[f"{group}.{name}"] = _text(value)
    for step in config.get("steps") or ():
        env = step.get("env") or {}
        prefix = "".join(f"{k}={shlex.quote(str(v))} " for k, v in sorted(env.items()))
        flat[f"step.{step.get('name')}"] = prefix + shlex.join(str(a) for a in step.get("argv", ()))
    flat["git_commit"] = _text(attempt.git_commit)
    flat["git_dirty"] = _text(attempt.git_dirty)
    for name, value in sorted((attempt.tools or {}).items()):
        flat[f"tool.{name}"] = _text(value)
    flat["outcome.status"] = attempt.status
    flat["outcome.exit_code"] = _text(attempt.exit_code)
    flat["outcome.diagnosis"] = diagnosis_line(attempt)
    flat["outcome.archs"] = archs_text(attempt)
    return flat


@dataclass(frozen=True)
class Change:
    key: str
    a: str | None  # None: not set in A
    b: str | None


@dataclass(frozen=True)
class AttemptDiff:
    a: int
    b: int
    a_status: str
    b_status: str
    a_diagnosis: str
    b_diagnosis: str
    changes: tuple[Change, ...]  # configuration and inputs
    outcome: tuple[Change, ...]  # how each ended
    a_kind: str = ""
    b_kind: str = ""
    same_kind: bool = True  # False: a build and a clean (say) have no settings in common


def diff_attempts(a: Attempt, b: Attempt) -> AttemptDiff:
    changes: list[Change] = []
    outcome: list[Change] = []
    same_kind = a.kind == b.kind
    if same_kind:
        fa, fb = flatten(a), flatten(b)
        for key in sorted(set(fa) | set(fb), key=_order):
            va, vb = fa.get(key), fb.get(key)
            if va == vb:
                continue
            (outcome if key.startswith("outcome.") else changes).append(Change(key, va, vb))
    return AttemptDiff(
        a.id,
        b.id,
        a.status,
        b.status,
        diagnosis_line(a),
        diagnosis_line(b),
        tuple(changes),
        tuple(outcome),
        kind_label(a),
        kind_label(b),
        same_kind,
    )


def _order(key: str) -> tuple[int, str]:
    groups = (
        "option.",
        "plan.",
        "arch_list",
        "env.",
        "cmake.",
        "cmake_args",
        "step.",
        "git_",
        "tool.",
        "outcome.",
    )
    for rank, prefix in enumerate(groups):
        if key.startswith(prefix):
            return rank + 1, key
    return 0, key


def change_summary(changes: tuple[Change, ...]) -> list[str]:
    """Changes as short sentences, without the step lines (they repeat the -D values)."""
    out = []
    for c in changes:
        if c.key.startswith("step."):
            continue
        if c.a is None:
            out.append(f"{c.key} set to {c.b!r}")
        elif c.b is None:
            out.append(f"{c.key} unset (was {c.a!r})")
        else:
            out.append(f"{c.key}: {c.a!r} -> {c.b!r}")
    return out


# -- export -------------------------------------------------------------------------------------
def _commands(attempt: Attempt) -> str:
    config = attempt.config or {}
    lines = [
        f"export {k}={shlex.quote(str(v))}" for k, v in sorted((config.get("env") or {}).items())
    ]
    for step in config.get("steps") or ():
        cwd = step.get("cwd")
        if cwd:
            lines.append(f"cd {shlex.quote(str(cwd))}")
        env = step.get("env") or {}
        prefix = "".join(f"{k}={shlex.quote(str(v))} " for k, v in sorted(env.items()))
        lines.append(prefix + shlex.join(str(a) for a in step.get("argv", ())))
    if not lines and attempt.command:
        lines.append(shlex.join(attempt.command))
    return "\n".join(lines) or "(no command recorded)"


def _gpu_caps(attempts: list[Attempt]) -> list[str]:
    caps: dict[str, None] = {}
    for attempt in attempts:
        for gpu in (attempt.probe or {}).get("gpus") or ():
            cap = gpu.get("compute_capability") if isinstance(gpu, dict) else None
            if cap:
                caps.setdefault(str(cap), None)
        for name in (attempt.config or {}).get("gpus") or ():
            match = _CAP.search(str(name))
            if match:
                caps.setdefault(match.group(1), None)
    return list(caps)


def previous_attempts(attempts: list[Attempt]) -> dict[int, Attempt]:
    """Each attempt's id -> the attempt before it of the same kind on the same tree: only those
    two compare (another tree's attempt differs in everything, and proves nothing)."""
    last: dict[tuple[str, str | None], Attempt] = {}
    previous: dict[int, Attempt] = {}
    for attempt in sorted(attempts, key=lambda a: a.id):
        key = (attempt.kind, attempt.tree)
        if key in last:
            previous[attempt.id] = last[key]
        last[key] = attempt
    return previous


def _changed_words(changes: tuple[Change, ...]) -> list[str]:
    """The changes a pattern names: settings by key, the source (git commit, local changes) and
    tools with their values, since a source change is often the real fix."""
    words: list[str] = []
    for c in changes:
        if c.key.startswith("step."):
            continue  # the command lines repeat the settings
        if c.key.startswith(("git_", "tool.")):
            a, b = c.a or "(unknown)", c.b or "(unknown)"
            if c.key == "git_commit":
                a, b = a[:12], b[:12]
            words.append(f"{c.key} {a} -> {b}")
        else:
            words.append(c.key)
    return words or [c.key for c in changes]


def patterns(attempts: list[Attempt]) -> tuple[list[str], list[str]]:
    """(which change came before which outcome, what was never tried), oldest first. Each
    attempt is compared with the one before it of the same kind on the same tree."""
    seen: list[str] = []
    previous = previous_attempts(attempts)
    for after in sorted(attempts, key=lambda a: a.id):
        before = previous.get(after.id)
        if before is None:
            continue
        changed = _changed_words(diff_attempts(before, after).changes)
        what = ", ".join(changed) if changed else "nothing recorded"
        if before.status != after.status:
            seen.append(
                f"attempt {after.id} (from {before.id}): after changing {what}, "
                f"{before.status} -> {after.status}"
                + (f" ({diagnosis_line(after)})" if diagnosis_line(after) else "")
            )
        elif changed:
            seen.append(
                f"attempt {after.id} (from {before.id}): changing {what} "
                f"did not change the outcome ({after.status})"
            )
    return seen, _never_tried([a for a in attempts if a.kind == "build"])


def _never_tried(attempts: list[Attempt]) -> list[str]:
    """Build advice (arch list, compiler cache, jobs, clean checkout): for builds only."""
    never: list[str] = []
    if not attempts:
        return never
    arch_lists = [tuple((a.config or {}).get("arch_list") or ()) for a in attempts]
    for cap in _gpu_caps(attempts):
        if not any(cap in {entry_cc(x) for x in archs} for archs in arch_lists):
            never.append(f"the arch list was never set to the GPU's own arch ({cap})")
    caches = {str((a.config or {}).get("cache")) for a in attempts if a.config}
    if caches and caches <= {"none", "None"}:
        never.append("a compiler cache (sccache or ccache) was never used")
    jobs = {str((a.config or {}).get("jobs")) for a in attempts if a.config}
    if (
        len(attempts) > 1
        and len(jobs) == 1
        and any(
            "memory" in diagnosis_line(a).lower() or "killed" in diagnosis_line(a).lower()
            for a in attempts
        )
    ):
        never.append(f"fewer parallel jobs (always {jobs.pop()})")
    if any(a.git_dirty for a in attempts) and not any(a.git_dirty is False for a in attempts):
        never.append("a build from a clean git checkout (every attempt had local changes)")
    return never


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}bash\n{text}\n{ticks}"


def _title(kind: str | None) -> str:
    return f"{(kind or 'build').capitalize()} log"


def export_md(attempts: list[Attempt], *, kind: str | None = None, tree: str | None = None) -> str:
    """The log of ``kind`` attempts as Markdown, oldest attempt first. ``kind`` and ``tree`` (the
    filters the attempts were chosen by) name the log and what an empty one lacks."""
    ordered = sorted(attempts, key=lambda a: a.id)
    out = [f"# {_title(kind)}", ""]
    if not ordered:
        what = f"{kind} attempts" if kind else "attempts"
        where = f" on the tree `{tree}`" if tree is not None else ""
        return "\n".join([*out, f"No {what}{where} in the ledger.", ""])
    out.append(
        f"{len(ordered)} attempts from {ordered[0].started_at} to {ordered[-1].started_at}, "
        "recorded by torchsmith."
    )
    out.append("")
    previous_of = previous_attempts(ordered)
    for attempt in ordered:
        kind_text = attempt.project_kind or kind_label(attempt)
        out += [f"## Attempt {attempt.id}: {attempt.status}", ""]
        facts = [
            f"- **When:** {attempt.started_at}"
            + (f" ({attempt.duration_s:.1f} s)" if attempt.duration_s is not None else ""),
            f"- **Tree:** `{attempt.tree or '?'}` ({kind_text})",
        ]
        if attempt.git_commit:
            dirty = ", with local changes" if attempt.git_dirty else ""
            facts.append(f"- **Commit:** `{attempt.git_commit[:12]}`{dirty}")
        archs = _text((attempt.config or {}).get("arch_list"))
        if archs:
            facts.append(f"- **Arch list:** `{archs}`")
        out += [*facts, "", _fence(_commands(attempt)), ""]
        previous = previous_of.get(attempt.id)
        if previous is not None:
            lines = change_summary(diff_attempts(previous, attempt).changes)
            out.append(f"**Changed from attempt {previous.id}:**")
            out.append("")
            out += [f"- `{line}`" for line in lines] or ["- nothing in the configuration"]
            out.append("")
        outcome = f"**Outcome:** {attempt.status}"
        if attempt.exit_code is not None:
            outcome += f" (exit status {attempt.exit_code})"
        diagnosis = diagnosis_line(attempt)
        if diagnosis:
            outcome += f": {diagnosis}"
        out += [outcome, ""]
        archs = archs_text(attempt)
        if archs:
            out += [f"Archs in the result: `{archs}`", ""]
    seen, never = patterns(ordered)
    out += ["## Patterns", ""]
    out += [f"- {line}" for line in seen] or ["- only one attempt, or no change of outcome"]
    out += ["", "## Never tried", ""]
    out += [f"- {line}" for line in never] or ["- nothing obvious"]
    out.append("")
    return "\n".join(out)


def export_html(
    attempts: list[Attempt], *, kind: str | None = None, tree: str | None = None
) -> str:
    from markdown_it import MarkdownIt  # noqa: PLC0415 (a dependency of Rich)

    body = MarkdownIt("commonmark").render(export_md(attempts, kind=kind, tree=tree))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(_title(kind))}</title>\n"
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}"
        "pre{background:#f4f4f4;padding:.8em;overflow-x:auto}</style>\n"
        f"</head>\n<body>\n{body}</body>\n</html>\n"
    )


# -- Rich views ---------------------------------------------------------------------------------
_STATUS_STYLE = {
    "succeeded": "green",
    "failed": "red",
    "died": "red",
    "interrupted": "yellow",
    "blocked": "yellow",
}


def _status(status: str) -> str:
    style = _STATUS_STYLE.get(status, "bold")
    return f"[{style}]{status}[/{style}]"


# The list's columns, in the order shown; a narrow terminal keeps them in _KEPT_FIRST's order
# (the id, the key that show, diff and --rollback take, always) and says which it left out.
_LIST_COLUMNS = ("id", "kind", "started", "status", "took", "tree", "why")
_KEPT_FIRST = ("id", "status", "kind", "started", "took", "why", "tree")
_FOLDED = frozenset({"tree", "why"})  # paths and reasons fold inside a word, never cut with "…"
_FOLDED_MIN = 8  # narrower, a path column is a few letters a line and its header breaks
_PADDING = 2  # a column's padding: one space each side


def _list_row(a: Attempt, *, short_time: bool) -> dict[str, str]:
    return {
        "id": str(a.id),
        "kind": kind_label(a, short=True),
        # the short form drops the year and seconds (attempts show has the full time)
        "started": a.started_at[5:16].replace("T", " ") if short_time else a.started_at[:19],
        "status": a.status,
        "took": f"{a.duration_s:.1f}s" if a.duration_s is not None else "",
        "tree": a.tree or "",
        "why": diagnosis_line(a),
    }


def _needs(name: str, rows: list[dict[str, str]]) -> int:
    """The width a column needs, its padding left out: a fixed one its widest cell (or header),
    a folded one at most its minimum (its header unbroken)."""
    widest = max([cell_len(name), *(cell_len(row[name]) for row in rows)])
    return min(widest, max(_FOLDED_MIN, cell_len(name))) if name in _FOLDED else widest


def list_columns(
    attempts: list[Attempt], width: int
) -> tuple[dict[str, int], list[dict[str, str]]]:
    """The columns that fit ``width`` (name -> the width it needs, in display order), and the
    rows' cells as they fit (started in its short form where needed). Every column at full
    length if they fit, then with the short start time, then as many of the most useful ones as
    fit: the id first and always."""
    rows: list[dict[str, str]] = []
    for short_time in (False, True):
        rows = [_list_row(a, short_time=short_time) for a in attempts]
        needs = {name: _needs(name, rows) for name in _LIST_COLUMNS}
        if sum(needs.values()) + _PADDING * len(needs) <= width:
            return needs, rows
    kept: list[str] = ["id"]
    used = needs["id"] + _PADDING
    for name in _KEPT_FIRST[1:]:
        used += needs[name] + _PADDING
        if used > width:
            break
        kept.append(name)
    return {name: needs[name] for name in _LIST_COLUMNS if name in kept}, rows


def render_list(attempts: Any, console: Console) -> None:
    if not attempts:
        console.print("no attempts recorded yet")
        return
    columns, rows = list_columns(list(attempts), console.width)
    table = Table(box=None, header_style="bold")
    for name, need in columns.items():
        if name in _FOLDED:
            table.add_column(name, overflow="fold", min_width=need)
        else:
            table.add_column(name, no_wrap=True, min_width=need)
    for a, row in zip(attempts, rows, strict=True):
        assert isinstance(a, Attempt)
        cells = {name: escape(value) for name, value in row.items()}
        cells["status"] = _status(a.status)
        table.add_row(*(cells[name] for name in columns))
    console.print(table)
    left_out = [name for name in _LIST_COLUMNS if name not in columns]
    if left_out:
        hidden = ", ".join(left_out)
        console.print(f"[dim]not shown at this width: {hidden} (attempts show ID)[/dim]")


def _facts(attempt: Attempt) -> list[tuple[str, str]]:
    """When, how long, how much memory, where and what ran: the columns flatten leaves out."""
    rows = [("started", attempt.started_at)]
    if attempt.finished_at:
        rows.append(("finished", attempt.finished_at))
    elif attempt.status == "died":
        rows.append(("finished", "never recorded (the process died)"))
    else:
        rows.append(("finished", f"not yet ({attempt.status})"))
    if attempt.duration_s is not None:
        rows.append(("took", f"{attempt.duration_s:.1f} s"))
    if attempt.peak_rss_bytes:
        rows.append(("peak memory", human_bytes(attempt.peak_rss_bytes)))
    rows += [("host", attempt.host), ("pid", str(attempt.pid))]
    rows.append(("tree", attempt.tree or ""))
    if attempt.command:
        rows.append(("command", shlex.join(str(a) for a in attempt.command)))
    if attempt.log_path:
        rows.append(("log", attempt.log_path))
    return rows


def _died(attempt: Attempt) -> list[tuple[str, str]]:
    if attempt.status != "died":
        return []
    return [
        (
            "outcome",
            f"died: process {attempt.pid} on {attempt.host} ended without recording how the "
            "attempt ended (killed, e.g. by the out-of-memory killer or Ctrl-C twice, or the "
            "machine went down)"
            + ("; the log has what ran until then" if attempt.log_path else ""),
        )
    ]


def _packages(result: dict[str, Any]) -> list[tuple[str, str]]:
    before, after = result.get("before"), result.get("after")
    if not isinstance(before, dict) or not isinstance(after, dict):
        return []
    rows: list[tuple[str, str]] = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a == b:
            continue
        if a is None:
            rows.append(("package", f"{name}: installed {b}"))
        elif b is None:
            rows.append(("package", f"{name}: removed (was {a})"))
        else:
            rows.append(("package", f"{name}: {a} -> {b}"))
    if not rows and before:
        restored = " (put back as it was)" if result.get("status") == "rolled-back" else ""
        rows.append(("packages", f"none changed{restored}, {len(before)} installed"))
    return rows


def _install_facts(attempt: Attempt) -> list[tuple[str, str]]:
    """An install's own record: the target, its error, what changed, where from, the snapshot."""
    if attempt.kind != "install":
        return []
    result = attempt.result if isinstance(attempt.result, dict) else {}
    rows: list[tuple[str, str]] = []
    rollback_of = (attempt.config or {}).get("rollback_of")
    if rollback_of is not None:
        rows.append(("rollback of", f"install #{rollback_of}"))
    if result.get("python"):
        rows.append(("python", str(result["python"])))
    if result.get("error") and str(result["error"]) != diagnosis_line(attempt):
        rows.append(("error", str(result["error"])))
    rows += _packages(result)
    for name, origin in sorted((result.get("origins") or {}).items()):
        rows.append(("from", f"{name}: {origin}"))
    if result.get("snapshot"):
        rows.append(("snapshot", str(result["snapshot"])))
    return rows


def render_show(attempt: Any, console: Console) -> None:
    assert isinstance(attempt, Attempt)
    console.print(
        f"[bold]attempt {attempt.id}[/bold] {escape(kind_label(attempt))} {_status(attempt.status)}"
    )
    table = Table(box=None, show_header=False)
    table.add_column(style="dim", no_wrap=True)
    # commands and paths are shown whole: wrapped at spaces, folded inside a long word
    table.add_column(overflow="fold")
    rows = _facts(attempt)
    rows += [(k, v) for k, v in flatten(attempt).items() if v and k != "tree"]
    rows += _died(attempt) + _install_facts(attempt)
    for key, value in rows:
        table.add_row(escape(key), escape(value))
    console.print(table)


def _a(kind: str) -> str:
    return ("an " if kind[:1] in "aeiou" else "a ") + escape(kind)


def render_diff(d: Any, console: Console) -> None:
    assert isinstance(d, AttemptDiff)
    if not d.same_kind:
        console.print(
            f"attempt {d.a} is {_a(d.a_kind)} and attempt {d.b} {_a(d.b_kind)}: "
            "different kinds have no settings to compare"
        )
        console.print(
            f"attempt {d.a}: {_status(d.a_status)} {escape(d.a_diagnosis)}\n"
            f"attempt {d.b}: {_status(d.b_status)} {escape(d.b_diagnosis)}"
        )
        return
    if not d.changes and not d.outcome:  # one sentence: an empty table says nothing more
        ended = escape(d.a_status + (f": {d.a_diagnosis}" if d.a_diagnosis else ""))
        if d.a == d.b:
            console.print(f"attempt {d.a} compared with itself: no difference ({ended})")
        else:
            console.print(
                f"no difference in configuration, inputs, tools or outcome (both {ended})"
            )
        return
    table = Table(box=None, header_style="bold")
    table.add_column("setting", overflow="fold")
    table.add_column(f"attempt {d.a}", overflow="fold")
    table.add_column(f"attempt {d.b}", overflow="fold")
    settings = [c for c in d.changes if not c.key.startswith("step.")]
    steps = [c.key for c in d.changes if c.key.startswith("step.")]
    # The step command lines repeat the -D values and environment above: named, not printed.
    shown = settings if settings else list(d.changes)
    for c in (*shown, *d.outcome):
        table.add_row(
            escape(c.key),
            escape(c.a if c.a is not None else "(unset)"),
            escape(c.b if c.b is not None else "(unset)"),
        )
    if not d.changes:
        console.print("[dim]no difference in configuration, inputs or tools[/dim]")
    console.print(table)
    if settings and steps:
        console.print(
            f"[dim]commands differ accordingly: {', '.join(steps)} (--json has them)[/dim]"
        )
    console.print(
        f"attempt {d.a}: {_status(d.a_status)} {escape(d.a_diagnosis)}\n"
        f"attempt {d.b}: {_status(d.b_status)} {escape(d.b_diagnosis)}"
    )
