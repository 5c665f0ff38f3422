"""Messages other projects print, taken from their own source at a pinned commit.

Each ``tests/explain/messages/*.toml`` file holds one family of messages (loaders, installers,
extension builders, GPU back-ends ...). An entry names the project's source file at a commit, the
message's template as written there, and the message as a user's log shows it (placeholders
filled the way a real run fills them). explain must file each under its category; ``none`` marks a
warning or notice of a run that goes on, which must get no diagnosis at all.

These are checked apart from the corpus: the corpus measures explain on logs people posted, this
measures it on every message a source can print, including the ones nobody has posted yet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from torchsmith.explain import explain_text
from torchsmith.taxonomy import CATEGORIES
from torchsmith.util.toml import loads_toml

HERE = Path(__file__).parent / "messages"
KEYS = {"project", "source", "template", "printed", "category", "why"}
# printf, Go's fmt, str.format, f-string, Rust format!, Windows %1 and shell ${x} placeholders
PLACEHOLDER = re.compile(r"%[-+ #0-9.*]*(?:l{0,2}|z|h)[sdiuxXfFgGeEcpqvw]|%\d|\{[^{}]*\}|\$\{\w+\}")
# a repository's file at a commit, another primary document (a vendor's page), or a message
# recorded here from the real tool (nvcc, ld, gcc)
COMMIT_URL = re.compile(
    r"^https://(?:github\.com|gitlab\.[\w.]+)/[\w.-]+/[\w.-]+/(?:-/)?blob/[0-9a-f]{40}/\S+$"
)
DOC_URL = re.compile(r"^https://(?!github\.com|gitlab\.)\S+$")
RECORDED = "recorded on the torchsmith dev machine, "


@dataclass(frozen=True)
class Message:
    file: str
    index: int
    project: str
    source: str
    template: str
    printed: str
    category: str
    why: str

    @property
    def id(self) -> str:
        return f"{self.file}:{self.index}"


def _load() -> list[Message]:
    out: list[Message] = []
    for path in sorted(HERE.glob("*.toml")):
        data = loads_toml(path.read_text(encoding="utf-8"))
        for i, entry in enumerate(data.get("message", []), 1):
            assert set(entry) == KEYS, f"{path.name} entry {i}: keys {sorted(entry)}"
            out.append(Message(path.stem, i, **{k: str(v) for k, v in entry.items()}))
    return out


MESSAGES = _load()


def test_every_family_file_has_messages() -> None:
    assert len({m.file for m in MESSAGES}) >= 1
    assert all(sum(m.file == f for m in MESSAGES) >= 5 for f in {m.file for m in MESSAGES})


@pytest.mark.parametrize("message", MESSAGES, ids=[m.id for m in MESSAGES])
def test_the_entry_is_well_formed(message: Message) -> None:
    assert (
        COMMIT_URL.match(message.source)
        or DOC_URL.match(message.source)
        or message.source.startswith(RECORDED)
    ), "source: a repository file at a 40-hex commit, a vendor's page, or a recording made here"
    assert message.category == "none" or message.category in CATEGORIES
    assert message.why.strip()
    # the printed text comes from the template: its literal pieces appear in order
    at = 0
    for piece in PLACEHOLDER.split(message.template):
        if not piece.strip():
            continue
        found = message.printed.find(piece, at)
        assert found >= 0, f"template piece {piece!r} not in printed text (in order)"
        at = found + len(piece)


@pytest.mark.parametrize("message", MESSAGES, ids=[m.id for m in MESSAGES])
def test_explain_files_the_message_under_its_category(message: Message) -> None:
    result = explain_text(message.printed.rstrip("\n") + "\n")
    got = result.diagnoses[0].category if result.diagnoses else "none"
    assert got == message.category, (
        f"{message.printed[:120]!r}: want {message.category}, got {got}"
        + (f" ({result.diagnoses[0].rule})" if result.diagnoses else "")
    )
