"""Read a build script the way its shell would: logical lines, variables, quoting, commands.

Four dialects: cmd (``^`` continuations, ``set``, ``%VAR%``/``!VAR!``, ``call vcvars64.bat``),
PowerShell (backtick continuations, ``$env:X = ...``, single quotes with ``''``), bash (``\\``
continuations, ``export``, ``VAR=x cmd``), and Markdown notes whose fenced code blocks hold any
of those (each block is one section: one attempt of a hand-written log). A bare command line is
a one-line bash or cmd script.

Nothing here runs anything: variables are expanded from what the script itself set (and, for
names it never set, left as written), so the result is what the script *would* pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Dialect = Literal["cmd", "powershell", "bash"]
_DIALECT_ALIASES: dict[str, Dialect] = {
    "bat": "cmd",
    "batch": "cmd",
    "cmd": "cmd",
    "dos": "cmd",
    "doscon": "cmd",
    "powershell": "powershell",
    "ps1": "powershell",
    "ps": "powershell",
    "pwsh": "powershell",
    "posh": "powershell",
    "bash": "bash",
    "sh": "bash",
    "shell": "bash",
    "zsh": "bash",
    "console": "bash",
    "shell-session": "bash",
}


@dataclass(frozen=True)
class Assignment:
    name: str
    value: str  # after expansion
    line: int
    raw: str  # the logical line as written


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]  # after expansion and unquoting
    line: int
    raw: str
    env: tuple[tuple[str, str], ...] = ()  # bash prefix assignments: VAR=x cmd ...
    end_line: int = 0  # the last physical line of a continued command


@dataclass(frozen=True)
class Section:
    """One script: the whole file, or one fenced block of a Markdown file."""

    index: int
    dialect: Dialect
    first_line: int
    title: str | None = None  # the Markdown heading above the block
    assignments: tuple[Assignment, ...] = ()
    commands: tuple[Command, ...] = ()
    problems: tuple[tuple[int, str], ...] = ()  # (line, what could not be read)
    physical: tuple[str, ...] = ()  # the section's lines as written (first_line is index 0)

    def line_of(self, needle: str, first: int, last: int) -> int:
        """The physical line in first..last that holds ``needle``; ``first`` if none does."""
        for number in range(first, max(first, last) + 1):
            index = number - self.first_line
            if 0 <= index < len(self.physical) and needle in self.physical[index]:
                return number
        return first


@dataclass(frozen=True)
class Script:
    kind: Literal["script", "markdown"]
    sections: tuple[Section, ...] = field(default_factory=tuple)


# -- dialect detection -------------------------------------------------------------------------
_CMD_HINTS = re.compile(
    r"(?im)^\s*(@echo\s+off|rem\s|::|set\s+\"?\w+=|setlocal|call\s+\S+\.(bat|cmd))|%\w+%|\^\s*$"
)
_PS_HINTS = re.compile(r"(?i)\$env:\w+|`\s*$|^\s*\$\w+\s*=|Write-Host|Set-Location")
_BASH_HINTS = re.compile(r"(?m)^\s*(export\s+\w+=|#!/.*\b(ba)?sh\b)|\$\{?\w+\}?|\\\s*$")


def detect_dialect(text: str, filename: str | None = None) -> Dialect:
    if filename:
        suffix = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
        if suffix in ("bat", "cmd"):
            return "cmd"
        if suffix in ("ps1", "psm1"):
            return "powershell"
        if suffix in ("sh", "bash", "zsh"):
            return "bash"
    if re.search(r"(?m)^\s*PS [A-Za-z]:\\[^>]*>", text):
        return "powershell"
    if re.search(r"(?m)^\s*[A-Za-z]:\\[^>\"]*>", text):
        return "cmd"
    scores = {
        "powershell": len(_PS_HINTS.findall(text)) * 2,
        "cmd": len(_CMD_HINTS.findall(text)) * 2,
        "bash": len(_BASH_HINTS.findall(text)),
    }
    best = max(scores, key=lambda k: scores[k])
    return best if scores[best] else "bash"  # type: ignore[return-value]


def dialect_from_info(info: str) -> Dialect | None:
    word = info.strip().split()[0].lower() if info.strip() else ""
    return _DIALECT_ALIASES.get(word.lstrip("{.").rstrip("}"))


# -- logical lines -----------------------------------------------------------------------------
def logical_lines(text: str, dialect: Dialect, first_line: int = 1) -> list[tuple[int, int, str]]:
    """Join continuation lines; drop comments and blank lines. Returns (first, last, text).

    The body of a bash here-document (``cat > f <<EOF`` ... ``EOF``) is data for a command, not
    lines the shell runs: it is dropped, so an ``export`` written into a file sets nothing here.
    """
    out: list[tuple[int, int, str]] = []
    pending: list[str] = []
    heredocs: list[tuple[str, bool]] = []  # (terminator, leading tabs stripped) still open
    start = first_line
    marker = {"cmd": "^", "powershell": "`", "bash": "\\"}[dialect]
    for offset, physical in enumerate(text.splitlines()):
        number = first_line + offset
        if heredocs and not pending:
            word, tabs = heredocs[0]
            if (physical.rstrip("\r").lstrip("\t") if tabs else physical.rstrip("\r")) == word:
                heredocs.pop(0)
            continue
        line = _PROMPT.sub("", physical.rstrip("\r\n").rstrip(), count=1)
        if not pending:
            start = number
            if _is_comment(line, dialect):
                continue
        continued = line.endswith(marker) and not line.endswith(marker * 2)
        pending.append(line[:-1] if continued else line)
        if continued:
            continue
        joined = " ".join(part.strip() for part in pending).strip()
        pending = []
        if joined:
            out.append((start, number, joined))
            if dialect == "bash":
                heredocs += _heredocs(joined)
    if pending:
        joined = " ".join(part.strip() for part in pending).strip()
        if joined:
            out.append((start, first_line + len(text.splitlines()) - 1, joined))
    return out


_HEREDOC = re.compile(r"""<<(-?)[ \t]*(?:'([^']*)'|"([^"]*)"|\\?([^\s'"<>|&;()]+))""")


def _heredocs(line: str) -> list[tuple[str, bool]]:
    """The here-documents a bash line opens (``<<EOF``, ``<<-'END'``; not ``<<<``, not inside
    quotes or ``$(( 1 << 2 ))``), in order: (terminator, whether leading tabs are stripped)."""
    out: list[tuple[str, bool]] = []
    quote: str | None = None
    arithmetic = 0
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            quote = None if ch == quote else quote
        elif ch == "\\":
            i += 2
            continue
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t;&|("):  # a comment: the rest is prose
            break
        elif line.startswith(("((", "))"), i):
            arithmetic = max(0, arithmetic + (1 if ch == "(" else -1))
            i += 2
            continue
        elif line.startswith("<<<", i):  # a here-string: the word is the input, no body
            i += 3
            continue
        elif not arithmetic and line.startswith("<<", i):
            found = _HEREDOC.match(line, i)
            if found:
                word = next(g for g in found.groups()[1:] if g is not None)
                out.append((word, found.group(1) == "-"))
                i = found.end()
                continue
        i += 1
    return out


# A shell prompt pasted in front of a command: "C:\src>", "PS C:\src> ", "$ ", "(venv) $ ".
_PROMPT = re.compile(r"^\s*(?:\([\w.-]+\)\s*)?(?:[A-Za-z]:\\[^>\"]*>|PS [^>]*>\s*|\$ )")


def _is_comment(line: str, dialect: Dialect) -> bool:
    stripped = line.strip()
    if dialect == "cmd":
        lowered = stripped.lower()
        return lowered.startswith(("::", "rem ", "@rem ")) or lowered in ("rem", "@rem")
    return stripped.startswith("#")


# -- one section ---------------------------------------------------------------------------------
def parse_section(
    text: str, dialect: Dialect, *, index: int = 0, first_line: int = 1, title: str | None = None
) -> Section:
    variables: dict[str, str] = {}
    assignments: list[Assignment] = []
    commands: list[Command] = []
    problems: list[tuple[int, str]] = []
    for number, last, line in logical_lines(text, dialect, first_line):
        for statement in _split_statements(line, dialect):
            try:
                parsed = _parse_statement(statement, dialect, variables)
            except ValueError as exc:
                problems.append((number, str(exc)))
                continue
            if parsed is None:
                continue
            if isinstance(parsed, list):
                for name, value in parsed:
                    variables[name.upper() if dialect != "bash" else name] = value
                    assignments.append(Assignment(name, value, number, statement))
                continue
            argv, prefix = parsed
            if argv:
                commands.append(
                    Command(tuple(argv), number, statement, tuple(prefix), end_line=last)
                )
                for name, value in prefix:
                    assignments.append(Assignment(name, value, number, statement))
    return Section(
        index=index,
        dialect=dialect,
        first_line=first_line,
        title=title,
        assignments=tuple(assignments),
        commands=tuple(commands),
        problems=tuple(problems),
        physical=tuple(text.splitlines()),
    )


def _split_statements(line: str, dialect: Dialect) -> list[str]:
    """Split on ``&&``, ``||``, ``;`` (bash/PowerShell) and ``&`` (cmd) outside quotes."""
    parts: list[str] = []
    current: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
            i += 1
            continue
        if ch in "\"'" and not (dialect == "cmd" and ch == "'"):
            quote = ch
            current.append(ch)
            i += 1
            continue
        if dialect == "cmd" and ch == "^" and i + 1 < len(line):
            current.append(line[i : i + 2])
            i += 2
            continue
        two = line[i : i + 2]
        if two in ("&&", "||"):
            parts.append("".join(current))
            current = []
            i += 2
            continue
        if (ch == ";" and dialect != "cmd") or (ch == "&" and dialect == "cmd"):
            parts.append("".join(current))
            current = []
            i += 1
            continue
        current.append(ch)
        i += 1
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


Parsed = list[tuple[str, str]] | tuple[list[str], list[tuple[str, str]]] | None


def _parse_statement(statement: str, dialect: Dialect, variables: dict[str, str]) -> Parsed:
    if dialect == "cmd":
        return _parse_cmd(statement, variables)
    if dialect == "powershell":
        return _parse_powershell(statement, variables)
    return _parse_bash(statement, variables)


# -- cmd ---------------------------------------------------------------------------------------
_CMD_SET = re.compile(r'(?is)^@?set\s+(?:/a\s+)?(?:"([^=]+)=(.*)"|([^=\s"]+)\s*=(.*))$')
_CMD_VAR = re.compile(r"%([A-Za-z_][\w()\-. ]*?)%|!([A-Za-z_][\w]*)!")


def _expand_cmd(text: str, variables: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = (match.group(1) or match.group(2)).upper()
        return variables.get(name, match.group(0))

    text = text.replace("%%", "\x00")
    # Two passes: `%A%` may expand to text holding another reference (delayed expansion).
    for _ in range(2):
        text = _CMD_VAR.sub(replace, text)
    return text.replace("\x00", "%")


def _parse_cmd(statement: str, variables: dict[str, str]) -> Parsed:
    body = statement.lstrip("@").strip()
    lowered = body.lower()
    if lowered.startswith(("echo", "rem ", "::", "if ", "goto", "exit", "pause", "setlocal")):
        if lowered.startswith("if ") and ")" not in body:
            pass
        return None
    if lowered.startswith(":"):
        return None
    match = _CMD_SET.match(body)
    if match:
        name = (match.group(1) or match.group(3)).strip()
        value = match.group(2) if match.group(1) else match.group(4)
        return [(name, _expand_cmd(value.strip(), variables))]
    if lowered.startswith("call "):
        body = body[5:].strip()
    return _tokens_cmd(_expand_cmd(body, variables)), []


def _tokens_cmd(text: str) -> list[str]:
    """cmd tokenisation: whitespace outside double quotes; ``^`` escapes the next char."""
    tokens: list[str] = []
    current: list[str] = []
    in_quotes = False
    started = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "^" and not in_quotes and i + 1 < len(text):
            current.append(text[i + 1])
            started = True
            i += 2
            continue
        if ch == '"':
            in_quotes = not in_quotes
            started = True
        elif ch.isspace() and not in_quotes:
            if started:
                tokens.append("".join(current))
                current, started = [], False
        else:
            current.append(ch)
            started = True
        i += 1
    if in_quotes:
        raise ValueError("unbalanced double quote")
    if started:
        tokens.append("".join(current))
    return tokens


# -- words: one tokenizer for the POSIX and PowerShell quoting rules ------------------------------
@dataclass(frozen=True)
class _Quoting:
    escape: str  # escapes the next character outside quotes (and inside double quotes)
    dq_escapable: str | None  # what the escape may escape inside "...": None for anything
    single_doubling: bool  # '' inside '...' is one quote (PowerShell)
    comment: str | None  # starts a comment at the beginning of a word


_POWERSHELL_WORDS = _Quoting(escape="`", dq_escapable=None, single_doubling=True, comment=None)
_BASH_WORDS = _Quoting(escape="\\", dq_escapable='"\\$`', single_doubling=False, comment="#")


def _single_quoted(text: str, start: int, rules: _Quoting) -> tuple[str, int]:
    """The literal text of '...' starting at ``start``, and the index after it."""
    out: list[str] = []
    end = start + 1
    while True:
        if end >= len(text):
            raise ValueError("unbalanced single quote")
        if text[end] == "'":
            if rules.single_doubling and text[end + 1 : end + 2] == "'":
                out.append("'")
                end += 2
                continue
            return "".join(out), end + 1
        out.append(text[end])
        end += 1


def _double_quoted(
    text: str, start: int, rules: _Quoting, expand: Callable[[str], str]
) -> tuple[str, int]:
    """The text of "..." starting at ``start``, and the index after it.

    Variables are expanded, except where an escape made a character literal (``"\\$HOME"``).
    """
    out: list[str] = []
    run: list[str] = []  # unescaped text, expanded when an escape or the closing quote ends it
    end = start + 1
    while True:
        if end >= len(text):
            raise ValueError("unbalanced double quote")
        ch = text[end]
        escapable = rules.dq_escapable is None or text[end + 1 : end + 2] in rules.dq_escapable
        if ch == rules.escape and end + 1 < len(text) and escapable:
            out.append(expand("".join(run)))
            run = []
            out.append(text[end + 1])
            end += 2
            continue
        if ch == '"':
            out.append(expand("".join(run)))
            return "".join(out), end + 1
        run.append(ch)
        end += 1


def _words(text: str, rules: _Quoting, expand: Callable[[str], str]) -> list[str]:
    """Split a command line into words the way the shell would, expanding outside '...'."""
    stops = "'\"" + rules.escape
    tokens: list[str] = []
    current: list[str] = []
    started = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "'":
            chunk, i = _single_quoted(text, i, rules)
            current.append(chunk)
        elif ch == '"':
            chunk, i = _double_quoted(text, i, rules, expand)
            current.append(chunk)
        elif ch == rules.escape and i + 1 < len(text):
            current.append(text[i + 1])
            i += 2
        elif rules.comment is not None and ch == rules.comment and not started:
            break
        elif ch.isspace():
            if started:
                tokens.append("".join(current))
                current, started = [], False
            i += 1
            continue
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in stops:
                j += 1
            current.append(expand(text[i:j]))
            i = j
        started = True
    if started:
        tokens.append("".join(current))
    return tokens


# -- PowerShell --------------------------------------------------------------------------------
_PS_ENV_SET = re.compile(r"(?is)^\$env:([\w()]+)\s*=\s*(.+)$")
_PS_VAR_SET = re.compile(r"(?is)^\$([A-Za-z_]\w*)\s*=\s*(.+)$")
_PS_SETITEM = re.compile(r"(?is)^(?:Set-Item|si)\s+-?(?:Path\s+)?env:(\w+)\s+(?:-Value\s+)?(.+)$")
_PS_REF = re.compile(r"\$\{env:(\w+)\}|\$env:(\w+)|\$\{(\w+)\}|\$([A-Za-z_]\w*)", re.IGNORECASE)


def _expand_ps(text: str, variables: dict[str, str], ps_vars: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        env_name = match.group(1) or match.group(2)
        if env_name:
            return variables.get(env_name.upper(), match.group(0))
        name = (match.group(3) or match.group(4)).upper()
        return ps_vars.get(name, match.group(0))

    return _PS_REF.sub(replace, text)


def _ps_tokens(text: str, variables: dict[str, str]) -> list[str]:
    ps_vars = {k[4:]: v for k, v in variables.items() if k.startswith("$PS:")}
    env = {k: v for k, v in variables.items() if not k.startswith("$PS:")}
    return _words(text, _POWERSHELL_WORDS, lambda chunk: _expand_ps(chunk, env, ps_vars))


def _parse_powershell(statement: str, variables: dict[str, str]) -> Parsed:
    body = statement.strip()
    lowered = body.lower()
    if lowered.startswith(("write-host", "write-output", "echo ", "if ", "if(", "}", "{")):
        return None
    for pattern, prefix in ((_PS_ENV_SET, ""), (_PS_SETITEM, "")):
        match = pattern.match(body)
        if match:
            value = " ".join(_ps_tokens(match.group(2).strip(), variables))
            return [(prefix + match.group(1), value)]
    match = _PS_VAR_SET.match(body)
    if match:
        value = " ".join(_ps_tokens(match.group(2).strip(), variables))
        variables["$PS:" + match.group(1).upper()] = value
        return None
    if body.startswith("&"):
        body = body[1:].strip()
    return _ps_tokens(body, variables), []


# -- bash --------------------------------------------------------------------------------------
_BASH_ASSIGN = re.compile(r"^([A-Za-z_]\w*)=(.*)$", re.DOTALL)
_BASH_REF = re.compile(r"\$\{([A-Za-z_]\w*)(?::?-[^}]*)?\}|\$([A-Za-z_]\w*)")


def _expand_bash(text: str, variables: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return variables.get(name, match.group(0))

    return _BASH_REF.sub(replace, text)


def _bash_tokens(text: str, variables: dict[str, str]) -> list[str]:
    return _words(text, _BASH_WORDS, lambda chunk: _expand_bash(chunk, variables))


def _parse_bash(statement: str, variables: dict[str, str]) -> Parsed:
    body = statement.strip()
    if body.startswith(("echo ", "if ", "then", "fi", "else", "for ", "do", "done", "set -")):
        return None
    tokens = _bash_tokens(body, variables)
    if not tokens:
        return None
    if tokens[0] in ("export", "declare", "local"):
        pairs = []
        for token in tokens[1:]:
            match = _BASH_ASSIGN.match(token)
            if match:
                pairs.append((match.group(1), match.group(2)))
        return pairs or None
    prefix: list[tuple[str, str]] = []
    while tokens and _BASH_ASSIGN.match(tokens[0]):
        match = _BASH_ASSIGN.match(tokens[0])
        assert match is not None
        prefix.append((match.group(1), match.group(2)))
        tokens = tokens[1:]
    if not tokens:
        return prefix
    if tokens[0] in ("sudo", "time", "env", "nohup"):
        tokens = tokens[1:]
        while tokens and _BASH_ASSIGN.match(tokens[0]):
            match = _BASH_ASSIGN.match(tokens[0])
            assert match is not None
            prefix.append((match.group(1), match.group(2)))
            tokens = tokens[1:]
    return tokens, prefix


# -- whole files -------------------------------------------------------------------------------
_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([^`]*)$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")


def looks_like_markdown(text: str, filename: str | None) -> bool:
    if filename and filename.lower().endswith((".md", ".markdown", ".txt")):
        return bool(re.search(r"(?m)^\s*(```|~~~)", text))
    return bool(re.search(r"(?m)^\s*```", text))


def parse_script(text: str, filename: str | None = None) -> Script:
    if looks_like_markdown(text, filename):
        return Script("markdown", tuple(_markdown_sections(text)))
    dialect = detect_dialect(text, filename)
    return Script("script", (parse_section(text, dialect),))


def _markdown_sections(text: str) -> list[Section]:
    sections: list[Section] = []
    lines = text.splitlines()
    title: str | None = None
    i = 0
    while i < len(lines):
        heading = _HEADING.match(lines[i])
        if heading:
            title = heading.group(1)
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        marker, info = fence.group(2), fence.group(3)
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(marker):
            body.append(lines[j])
            j += 1
        block = "\n".join(body)
        dialect = dialect_from_info(info) or detect_dialect(block)
        if dialect_from_info(info) is not None or _has_build_words(block):
            sections.append(
                parse_section(block, dialect, index=len(sections), first_line=i + 2, title=title)
            )
        i = j + 1
    return sections


def _has_build_words(block: str) -> bool:
    return bool(
        re.search(r"(?i)\b(cmake|setup\.py|pip\s+install|TORCH_CUDA_ARCH_LIST|nvcc)\b", block)
    )
