"""Windows quoting for fix lines and corrected commands, checked against the splitting oracles in
winargv.py: what cmd hands the program, and how the program splits it."""

from __future__ import annotations

import pytest

from tests.util.winargv import cmd_unescaped, msvc_argv
from torchsmith import platforms
from torchsmith.build.scripts import shell_command
from torchsmith.util.shellwords import argv_quote, cmd_escaped, windows_command


@pytest.mark.parametrize(
    "value",
    [
        'CMAKE_CXX_FLAGS=/EHsc /DFOO="bar baz"',
        'CMAKE_CXX_FLAGS=/DNAME="a&b|c" /W3',
        "CMAKE_PREFIX_PATH=C:\\Program Files\\deps\\",
        "CMAKE_ARGS=-DX=1;2 -DY=3",
    ],
)
def test_a_windows_argument_reaches_the_program_whole(value: str) -> None:
    word = cmd_escaped(argv_quote(value))
    assert msvc_argv(cmd_unescaped(word)) == [value]
    assert msvc_argv(argv_quote(value)) == [value]  # after PowerShell's --%, as written


@pytest.mark.parametrize(
    "argv",
    [['"b', "'<<%|'\\b"], ['a"b', "x&y"], ["one two", 'q"', "<in>"]],
)
def test_cmd_escaping_follows_the_quotes_across_the_whole_line(argv: list[str]) -> None:
    # review: escaping word by word left a < live after a word with an odd number of quotes
    line = cmd_escaped(" ".join(argv_quote(a) for a in argv))
    assert msvc_argv(cmd_unescaped(line)) == argv


@pytest.mark.parametrize(
    "tree", ["C:\\src\\my proj\\", "C:\\R&D\\pytorch", "D:\\a (x86)\\b\\\\", "C:\\plain\\tree"]
)
def test_a_fix_line_passes_a_windows_tree_whole(tree: str) -> None:
    # build's fix lines quoted a tree as "..." without doubling a final \: the program got
    # `C:\src\my proj"` and everything after it in one argument
    with platforms.override("windows"):
        said = shell_command(("torchsmith", "clean", "--yes", tree))
    cmd = said.split(" (in PowerShell: ")[0]
    # the same folder: a final backslash is dropped, which every PowerShell passes on right
    assert msvc_argv(cmd_unescaped(cmd)) == ["torchsmith", "clean", "--yes", tree.rstrip("\\")]


def test_each_windows_shell_gets_a_line_that_passes_the_words_whole() -> None:
    # review: after --% PowerShell 7.3+ splits at spaces; it passes a single-quoted word right
    lines = dict(windows_command(["torchsmith", "build", "--set", 'F=/DFOO="bar baz"']))
    assert set(lines) == {"cmd", "PowerShell 7.3+", "Windows PowerShell 5.1"}
    assert lines["PowerShell 7.3+"] == "torchsmith build --set 'F=/DFOO=\"bar baz\"'"
    assert msvc_argv(lines["Windows PowerShell 5.1"].split(" --% ", 1)[1]) == [
        "build",
        "--set",
        'F=/DFOO="bar baz"',
    ]
    # a | that 5.1 would read as a pipe after --% (it knows no \"): no 5.1 line is given
    assert "Windows PowerShell 5.1" not in dict(windows_command(["t", 'a"b', "x|y"]))
    assert windows_command(["C:\\Program Files\\Python\\python.exe", "-m", "pip"]) == [
        ("cmd", '"C:\\Program Files\\Python\\python.exe" -m pip'),
        ("PowerShell", "& 'C:\\Program Files\\Python\\python.exe' -m pip"),
    ]
    assert windows_command(["torchsmith", "clean", "C:\\t y"]) == [
        ("", 'torchsmith clean "C:\\t y"')
    ]
    assert windows_command(["torchsmith", "clean", "C:\\c$d"])[1] == (
        "PowerShell",
        "torchsmith clean 'C:\\c$d'",
    )


def test_a_fix_line_drops_a_paths_final_backslash_on_windows() -> None:
    with platforms.override("windows"):
        assert shell_command(("torchsmith", "clean", "C:\\src\\my proj\\")) == (
            'torchsmith clean "C:\\src\\my proj"'
        )
        assert shell_command(("torchsmith", "clean", "C:\\")) == "torchsmith clean C:\\"
