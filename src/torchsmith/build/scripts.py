"""Standalone build scripts: the same environment and steps as ``torchsmith build``, written out.

``emit_script(config, shell)`` is pure: it turns a :class:`BuildConfig` into the text of a bash,
PowerShell or cmd script that checks the tools it needs, sets the same environment, optionally
cleans the project's build directory (only when ``TORCHSMITH_CLEAN=1``), runs every step in its
folder, checks each step's exit status and logs every line with a timestamp. A Windows build that
needs Visual Studio's environment calls vcvars64.bat once (PowerShell imports what it sets). The
cmd script keeps its variables and folder to itself (setlocal); the PowerShell script, which
runs in the caller's session, puts both back when it ends, however it ends.

Quoting, per shell:
- bash: every word through :func:`shlex.quote` (single quotes; ``'`` as ``'"'"'``).
- PowerShell: every word in single quotes, ``'`` doubled; nothing inside expands.
- cmd: every word that is not plainly safe in double quotes; ``%`` doubled (a batch file expands
  ``%`` even inside quotes). A ``"`` inside a value cannot be passed reliably through cmd, so
  such a config is refused (UsageError). Log messages are made inert (see cmd_echo_text).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from torchsmith import platforms
from torchsmith.build.drivers import CPP_EXT_PARALLEL
from torchsmith.build.model import BuildConfig, Step
from torchsmith.errors import InputError, UsageError
from torchsmith.util.shellwords import ps_quote, windows_command

Shell = Literal["bash", "powershell", "cmd"]
SHELLS: tuple[Shell, ...] = ("bash", "powershell", "cmd")
EXTENSIONS: dict[Shell, str] = {"bash": ".sh", "powershell": ".ps1", "cmd": ".cmd"}

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CMD_SAFE = re.compile(r"[A-Za-z0-9_\-+./:\\@]+\Z")
_CMD_SPECIAL = re.compile(r'[&|<>^%"]')
CLEAN_VAR = "TORCHSMITH_CLEAN"


def emit_script(config: BuildConfig, shell: Shell) -> str:
    """The text of a standalone script for ``shell`` that runs ``config``'s build."""
    _check_names(config)
    if shell == "bash":
        return _bash(config)
    if shell == "powershell":
        return _powershell(config)
    if shell == "cmd":
        return _cmd(config)
    raise UsageError(f"unknown shell {shell!r}", tip=f"pick one of: {', '.join(SHELLS)}")


def shell_command(argv: Iterable[str]) -> str:
    """``argv`` (a program and paths) as one command for this machine's shell, in a fix someone
    copies. On Windows a path's final backslash is dropped (the same folder, and a word every
    PowerShell passes on right), and PowerShell's line follows cmd's where cmd's does not run
    there (a quoted program needs PowerShell's ``&``, which cmd refuses)."""
    words = list(argv)
    if platforms.current_os() != "windows":
        return shlex.join(words)
    words = [_without_final_backslash(w) for w in words]
    lines = windows_command(words)
    first = lines[0][1]
    rest = "; ".join(f"in {shell}: {line}" for shell, line in lines[1:])
    return f"{first} ({rest})" if rest else first


def _without_final_backslash(word: str) -> str:
    trimmed = word.rstrip("\\")
    return trimmed if "\\" in trimmed and not trimmed.endswith(":") else word


def _check_names(config: BuildConfig) -> None:
    names = list(config.env)
    for step in config.steps:
        names.extend(step.env)
        if not step.argv:
            raise UsageError(f"build step {step.name!r} has no command")
    for name in names:
        if not _ENV_NAME.match(name):
            raise UsageError(
                f"environment variable name {name!r} cannot be set from a script",
                tip="use letters, digits and underscores only",
            )


_CLEAN_HOW = {
    "bash": f"run it as {CLEAN_VAR}=1 <script> to remove the build directory first",
    "powershell": f"set $env:{CLEAN_VAR} = '1' before running it to remove the build directory",
    "cmd": f"run set {CLEAN_VAR}=1 in the same window first to remove the build directory",
}


def _title(config: BuildConfig, shell: str) -> list[str]:
    project = config.project
    lines = [
        f"Build script for {project.name or project.path} ({project.kind}, {project.build_system})",
        "written by torchsmith: the same environment and steps as 'torchsmith build'",
        f"profile {config.profile}; archs {';'.join(config.arch_list) or '(none)'}; "
        f"jobs {config.jobs}; cache {config.cache}",
    ]
    if clean_dir(config) is not None:
        lines.append(_CLEAN_HOW[shell])
    return [line.replace("\n", " ").replace("\r", " ") for line in lines]


def _tool_checks(config: BuildConfig) -> list[str]:
    """The programs the steps start, in order, each once."""
    seen: dict[str, None] = {}
    for step in config.steps:
        seen.setdefault(step.argv[0], None)
    return list(seen)


def _driver_checks(config: BuildConfig) -> list[str]:
    """torchsmith's own driver scripts the steps run (a parallel extension build): the script
    needs them where they are, so it checks for them first and says what they are."""
    seen: dict[str, None] = {}
    for step in config.steps:
        for arg in step.argv[1:]:
            if arg == str(CPP_EXT_PARALLEL):
                seen.setdefault(arg, None)
    return list(seen)


_DRIVER_MISSING = (
    "not found: {path} (torchsmith's parallel extension build driver: install the same "
    "torchsmith here, or write the script again with torchsmith build --emit)"
)


_CLEAN_REFUSED = (
    "clean: {path} holds files git tracks or does not ignore; not removed ({refused_clean} "
    "removes only its build outputs)"
)
_CLEAN_NO_GIT = (
    "clean: git cannot list {tree} (no git work tree, no git, or git refusing it), so what is "
    "tracked there is not known; nothing removed ({clean} removes its build outputs)"
)


def _clean_messages(tree: str, target: str, shell: Shell) -> tuple[str, str]:
    """(build folder refused, tree not listable by git): the script's messages for its clean,
    each naming ``torchsmith clean TREE`` as a command to copy into the shell that printed it.
    bash quotes the tree. PowerShell and cmd keep their wording, the tree as it is (their golden
    files, tests/attempts/golden, pin it; cmd's log text cannot hold a quote at all)."""
    if shell == "bash":
        clean = f"torchsmith clean {shlex.quote(tree)}"
        return (
            _CLEAN_REFUSED.format(path=target, refused_clean=clean),
            _CLEAN_NO_GIT.format(tree=tree, clean=clean),
        )
    return (
        _CLEAN_REFUSED.format(path=target, refused_clean="torchsmith clean"),
        _CLEAN_NO_GIT.format(tree=tree, clean=f"torchsmith clean {tree}"),
    )


def clean_dir(config: BuildConfig) -> str | None:
    """The build directory to remove on request: inside the tree, never the tree itself."""
    build_dir = config.project.build_dir
    if not build_dir:
        return None
    tree = config.project.path.replace("\\", "/").rstrip("/") + "/"
    given = build_dir.replace("\\", "/")
    windows = re.match(r"[A-Za-z]:", tree) is not None  # only Windows paths ignore case
    if given.lower().startswith(tree.lower()) if windows else given.startswith(tree):
        build_dir = build_dir[len(tree) :]  # detection gives it absolute, inside the tree
    parts = build_dir.replace("\\", "/").split("/")
    if build_dir.startswith(("/", "\\")) or ".." in parts or re.match(r"[A-Za-z]:", build_dir):
        return None
    if all(part in ("", ".") for part in parts):
        return None
    return build_dir


# -- bash ---------------------------------------------------------------------------------------
def _bash(config: BuildConfig) -> str:
    if config.vcvars:
        raise UsageError(
            "this Windows build runs inside Visual Studio's environment (vcvars64.bat), "
            "which a bash script cannot call",
            tip="emit a PowerShell or cmd script instead (--emit powershell)",
        )
    q = shlex.quote
    tree = config.project.path
    out = ["#!/usr/bin/env bash", *(f"# {line}" for line in _title(config, "bash"))]
    out += [
        "set -euo pipefail",
        "",
        'LOG="${TORCHSMITH_LOG:-torchsmith-build-$(date -u +%Y%m%dT%H%M%SZ).log}"',
        'exec > >(tee -a "$LOG") 2>&1',
        'log() { printf \'%s %s\\n\' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*"; }',
        'fail() { log "FAILED: $*"; exit 1; }',
        "",
        "log 'checking tools'",
    ]
    for tool in _tool_checks(config):
        out.append(f"command -v {q(tool)} >/dev/null 2>&1 || fail {q('not found: ' + tool)}")
    for path in _driver_checks(config):
        out.append(f"[ -f {q(path)} ] || fail {q(_DRIVER_MISSING.format(path=path))}")
    if config.cuda_home:
        nvcc = config.cuda_home.rstrip("/") + "/bin/nvcc"
        out.append(f"[ -x {q(nvcc)} ] || fail {q('no nvcc at ' + nvcc)}")
    out += ["", "log 'environment'"]
    for name, value in config.env.items():
        out.append(f"export {name}={q(value)}")
    clean = clean_dir(config)
    if clean:
        target = tree.rstrip("/") + "/" + clean
        refused, no_git = _clean_messages(tree, target, "bash")
        out += [
            "",
            f'if [ "${{{CLEAN_VAR}:-0}}" = 1 ]; then',
            f"  listed=$(git -C {q(tree)} ls-files --cached --others --exclude-standard"
            f" -- {q(clean)} 2>/dev/null) ||",
            f"    fail {q(no_git)}",
            f'  [ -z "$listed" ] || fail {q(refused)}',
            f"  log {q('clean: removing ' + target)}",
            f"  rm -rf -- {q(target)}",
            "fi",
        ]
    for step in config.steps:
        out += ["", *_bash_step(step)]
    out += ["", "log 'build finished'", ""]
    return "\n".join(out)


def _bash_step(step: Step) -> list[str]:
    q = shlex.quote
    prefix = "".join(f"{name}={q(value)} " for name, value in step.env.items())
    command = prefix + " ".join(q(arg) for arg in step.argv)
    return [
        f"log {q('step ' + step.name + ': ' + ' '.join(step.argv))}",
        f"cd -- {q(step.cwd)} || fail {q('no folder ' + step.cwd)}",
        f'{command} || fail {q("step " + step.name)}" (exit status $?)"',
    ]


# -- PowerShell ---------------------------------------------------------------------------------
def _powershell(config: BuildConfig) -> str:
    p = ps_quote
    tree = config.project.path
    out = [*(f"# {line}" for line in _title(config, "powershell"))]
    out += [
        "$ErrorActionPreference = 'Stop'",
        "Set-StrictMode -Version 3.0",
        "$Log = if ($env:TORCHSMITH_LOG) { $env:TORCHSMITH_LOG } else "
        "{ 'torchsmith-build-' + "
        "(Get-Date).ToUniversalTime().ToString('yyyyMMddTHHmmssZ') + '.log' }",
        "# one log however the steps change folder: anchor a relative name where the script starts",
        "if (-not [System.IO.Path]::IsPathRooted($Log)) "
        "{ $Log = Join-Path (Get-Location).Path $Log }",
        "function Write-Log([string]$Message) {",
        "    $line = (Get-Date).ToUniversalTime().ToString('yyyy-MM-ddTHH:mm:ssZ') + ' ' "
        "+ $Message",
        "    Write-Host $line",
        "    Add-Content -LiteralPath $Log -Value $line",
        "}",
        "function Stop-Build([string]$Message) { throw $Message }",
        "",
        "# run as .\\build.ps1, the script shares your session: note its variables and folder",
        "# now, and put them back however the build ends",
        "$SavedEnv = @{}",
        "foreach ($Item in [Environment]::GetEnvironmentVariables().GetEnumerator()) "
        "{ $SavedEnv[$Item.Key] = $Item.Value }",
        "$SavedLocation = (Get-Location).Path",
        "$Failed = $null",
        "try {",
    ]
    body = []
    if config.vcvars:
        body += _ps_vcvars(config.vcvars)
    body.append("Write-Log 'checking tools'")
    for tool in _tool_checks(config):
        body.append(
            f"if (-not (Get-Command -Name {p(tool)} -ErrorAction SilentlyContinue)) "
            f"{{ Stop-Build {p('not found: ' + tool)} }}"
        )
    for path in _driver_checks(config):
        body.append(
            f"if (-not (Test-Path -LiteralPath {p(path)})) "
            f"{{ Stop-Build {p(_DRIVER_MISSING.format(path=path))} }}"
        )
    if config.cuda_home:
        nvcc = config.cuda_home.rstrip("\\/") + "\\bin\\nvcc.exe"
        body.append(
            f"if (-not (Test-Path -LiteralPath {p(nvcc)})) "
            f"{{ Stop-Build {p('no nvcc at ' + nvcc)} }}"
        )
    body += ["", "Write-Log 'environment'"]
    for name, value in config.env.items():
        body.append(f"$env:{name} = {p(value)}")
    clean = clean_dir(config)
    if clean:
        target = tree.rstrip("\\/") + "\\" + clean.replace("/", "\\")
        refused, no_git = _clean_messages(tree, target, "powershell")
        body += [
            "",
            f"if ($env:{CLEAN_VAR} -eq '1' -and (Test-Path -LiteralPath {p(target)})) {{",
            "    $Listed = $null",
            "    $GitStatus = 1",
            "    if (Get-Command -Name git -ErrorAction SilentlyContinue) {",
            "        $SavedPreference = $ErrorActionPreference",
            "        $ErrorActionPreference = 'Continue'  # 5.1 turns git's stderr into errors",
            f"        $Listed = git -C {p(tree)} ls-files --cached --others --exclude-standard "
            f"-- {p(clean)} 2>$null",
            "        $GitStatus = $LASTEXITCODE",
            "        $ErrorActionPreference = $SavedPreference",
            "    }",
            f"    if ($GitStatus -ne 0) {{ Stop-Build {p(no_git)} }}",
            f"    if ($Listed) {{ Stop-Build {p(refused)} }}",
            f"    Write-Log {p('clean: removing ' + target)}",
            f"    $Folder = Get-Item -LiteralPath {p(target)} -Force",
            "    if ($Folder.Attributes -band [System.IO.FileAttributes]::ReparsePoint) {",
            "        # a junction or link: the link goes, never what it points at (5.1's",
            "        # Remove-Item -Recurse would empty the target)",
            "        [System.IO.Directory]::Delete($Folder.FullName, $false)",
            "    } else {",
            f"        Remove-Item -LiteralPath {p(target)} -Recurse -Force",
            "    }",
            "}",
        ]
    for step in config.steps:
        body += ["", *_ps_step(step)]
    out += [f"    {line}" if line else "" for line in body]
    out += [
        "} catch {",
        "    $Failed = $_.Exception.Message",
        "} finally {",
        "    foreach ($Name in @([Environment]::GetEnvironmentVariables().Keys)) {",
        "        if (-not $SavedEnv.ContainsKey($Name)) "
        "{ [Environment]::SetEnvironmentVariable($Name, $null) }",
        "    }",
        "    foreach ($Name in $SavedEnv.Keys) "
        "{ [Environment]::SetEnvironmentVariable($Name, $SavedEnv[$Name]) }",
        "    Set-Location -LiteralPath $SavedLocation",
        "}",
        "if ($null -ne $Failed) { Write-Log ('FAILED: ' + $Failed); exit 1 }",
        "Write-Log 'build finished'",
        "",
    ]
    return "\r\n".join(out)


def _ps_vcvars(vcvars: str) -> list[str]:
    """Import the environment vcvars64.bat sets, once: cmd calls it and writes ``set`` to a file
    in UTF-16 (/u), which PowerShell reads back whatever the console's code page."""
    p = ps_quote
    return [
        f"Write-Log {p('Visual Studio environment: ' + vcvars)}",
        "$VsSet = [System.IO.Path]::GetTempFileName()",
        "try {",
        f"    & cmd.exe /d /u /c ('call \"' + {p(vcvars)} + '\" && set > \"' + $VsSet + '\"')",
        "    if ($LASTEXITCODE -ne 0) "
        f"{{ Stop-Build ({p(vcvars + ' failed (exit status ')} + $LASTEXITCODE + ')') }}",
        "    foreach ($VsLine in (Get-Content -LiteralPath $VsSet -Encoding Unicode)) {",
        "        $At = $VsLine.IndexOf('=')",
        "        if ($At -gt 0) { [Environment]::SetEnvironmentVariable("
        "$VsLine.Substring(0, $At), $VsLine.Substring($At + 1)) }",
        "    }",
        "} finally {",
        "    Remove-Item -LiteralPath $VsSet -ErrorAction SilentlyContinue",
        "}",
        "if (-not (Get-Command -Name 'cl.exe' -ErrorAction SilentlyContinue)) "
        f"{{ Stop-Build {p('no cl.exe after ' + vcvars)} }}",
        "",
    ]


def _ps_step(step: Step) -> list[str]:
    p = ps_quote
    out = [f"Write-Log {p('step ' + step.name + ': ' + ' '.join(step.argv))}"]
    out.append(f"Set-Location -LiteralPath {p(step.cwd)}")
    for name, value in step.env.items():
        out.append(f"$env:{name} = {p(value)}")
    out.append("& " + " ".join(p(arg) for arg in step.argv))
    out.append(
        "if ($LASTEXITCODE -ne 0) "
        f"{{ Stop-Build ({p('step ' + step.name + ' (exit status ')} + $LASTEXITCODE + ')') }}"
    )
    for name in step.env:
        out.append(f"Remove-Item -LiteralPath Env:{name} -ErrorAction SilentlyContinue")
    return out


# -- cmd ----------------------------------------------------------------------------------------
def cmd_quote(value: str) -> str:
    """One argument for a line of a batch file, with ``%`` doubled.

    Safe words stay bare; all others go in double quotes, where ``& | < > ( ) ^ ; , =`` and
    spaces lose their meaning. A ``"`` in the value cannot be passed safely: UsageError.
    """
    _no_quote_or_newline(value)
    if _CMD_SAFE.match(value):
        return value
    return '"' + value.replace("%", "%%") + '"'


def cmd_echo_text(value: str) -> str:
    """Log text for ``call :log`` in a batch file, made inert.

    ``call`` doubles carets and ``echo %*`` re-parses its arguments, so no escaping survives
    both; instead the characters cmd acts on are replaced: ``( )`` by ``[ ]``, ``& | < > ^ %
    "`` by ``_``. The text is only a log message; commands and values are quoted exactly.
    """
    _no_quote_or_newline(value, allow_quote=True)
    return _CMD_SPECIAL.sub("_", value.translate(str.maketrans("()", "[]")))


def _no_quote_or_newline(value: str, *, allow_quote: bool = False) -> None:
    if ("\n" in value or "\r" in value) or (not allow_quote and '"' in value):
        raise UsageError(
            f"{value!r} cannot be written safely into a cmd script (a double quote or a newline)",
            tip="emit a PowerShell script instead (--emit powershell)",
        )


def _cmd(config: BuildConfig) -> str:
    tree = config.project.path
    out = ["@echo off", *(f"rem {cmd_echo_text(line)}" for line in _title(config, "cmd"))]
    out += [
        "setlocal EnableExtensions DisableDelayedExpansion",
        'if not defined TORCHSMITH_LOG set "TORCHSMITH_LOG=torchsmith-build.log"',
        'for %%I in ("%TORCHSMITH_LOG%") do set "TORCHSMITH_LOG=%%~fI"',
        "",
    ]
    if config.vcvars:
        # setlocal above keeps what it sets (and the folder) to this script
        out += [
            f"call :log {cmd_echo_text('Visual Studio environment: ' + config.vcvars)}",
            f"call {cmd_quote(config.vcvars)} >nul || (call :fail "
            f"{cmd_echo_text(config.vcvars + ' failed')} & exit /b 1)",
            f"where /q cl.exe || (call :fail {cmd_echo_text('no cl.exe after ' + config.vcvars)}"
            " & exit /b 1)",
            "",
        ]
    out.append("call :log checking tools")
    for tool in _tool_checks(config):
        if any(sep in tool for sep in ("\\", "/")):
            out.append(
                f"if not exist {cmd_quote(tool)} "
                f"(call :fail {cmd_echo_text('not found: ' + tool)} & exit /b 1)"
            )
        else:
            out.append(
                f"where /q {cmd_quote(tool)} || (call :fail {cmd_echo_text('not found: ' + tool)}"
                " & exit /b 1)"
            )
    for path in _driver_checks(config):
        out.append(
            f"if not exist {cmd_quote(path)} "
            f"(call :fail {cmd_echo_text(_DRIVER_MISSING.format(path=path))} & exit /b 1)"
        )
    if config.cuda_home:
        nvcc = config.cuda_home.rstrip("\\/") + "\\bin\\nvcc.exe"
        out.append(
            f"if not exist {cmd_quote(nvcc)} "
            f"(call :fail {cmd_echo_text('no nvcc at ' + nvcc)} & exit /b 1)"
        )
    out += ["", "call :log environment"]
    out += _cmd_sets(config.env)
    clean = clean_dir(config)
    if clean:
        target = tree.rstrip("\\/") + "\\" + clean.replace("/", "\\")
        refused, no_git = (cmd_echo_text(m) for m in _clean_messages(tree, target, "cmd"))
        # no temporary file: in a ( ) block every %RANDOM% is another number
        out += [
            "",
            f'if "%{CLEAN_VAR}%"=="1" if exist {cmd_quote(target)} (',
            f"  git -C {cmd_quote(tree)} rev-parse --is-inside-work-tree >nul 2>nul"
            f" || (call :fail {no_git} & exit /b 1)",
            f"  git -C {cmd_quote(tree)} ls-files --cached --others --exclude-standard -- "
            f"{cmd_quote(clean)} 2>nul | findstr /r . >nul && (call :fail {refused} & exit /b 1)",
            f"  rmdir /s /q {cmd_quote(target)}",
            ")",
        ]
    for step in config.steps:
        out += ["", *_cmd_step(step)]
    out += [
        "",
        "call :log build finished",
        "exit /b 0",
        "",
        ":log",
        "echo %DATE% %TIME% %*",
        '>>"%TORCHSMITH_LOG%" echo %DATE% %TIME% %*',
        "exit /b 0",
        "",
        ":fail",
        "call :log FAILED: %*",
        "exit /b 1",
        "",
    ]
    return "\r\n".join(out)


def _cmd_sets(env: Mapping[str, str]) -> list[str]:
    out = []
    for name, value in env.items():
        _no_quote_or_newline(value)
        out.append(f'set "{name}={value.replace("%", "%%")}"')
    return out


def _cmd_step(step: Step) -> list[str]:
    out = [f"call :log {cmd_echo_text('step ' + step.name + ': ' + ' '.join(step.argv))}"]
    out.append(
        f"cd /d {cmd_quote(step.cwd)} || (call :fail {cmd_echo_text('no folder ' + step.cwd)}"
        " & exit /b 1)"
    )
    if step.env:
        out.append("setlocal")
        out += _cmd_sets(step.env)
    out.append(" ".join(_cmd_args(step.argv)))
    # "if errorlevel 1" is false for a negative exit code (a crash: 0xC0000005 is -1073741819)
    out.append(
        f"if %ERRORLEVEL% neq 0 (call :fail {cmd_echo_text('step ' + step.name)} & exit /b 1)"
    )
    if step.env:
        out.append("endlocal")
    return out


def _cmd_args(argv: Iterable[str]) -> list[str]:
    return [cmd_quote(arg) for arg in argv]


def write_script(config: BuildConfig, shell: Shell, output: Path | None) -> str:
    """What ``torchsmith build --emit SHELL [-o FILE]`` does: the script, written to ``output``
    (executable for bash) or returned for printing when ``output`` is None."""
    text = emit_script(config, shell)
    if output is None:
        return text
    try:
        output.write_bytes(text.encode("utf-8"))
        if shell == "bash":
            output.chmod(output.stat().st_mode | 0o111)
    except OSError as exc:
        raise InputError(
            f"cannot write {output}: {exc.strerror or exc}", tip="pass a writable -o path"
        ) from exc
    return text
