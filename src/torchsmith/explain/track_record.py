"""How explain's first answers fared on logs nobody had tuned it for, by what decided them.

The figures come from ``tests/explain/corpus/first_answers.tsv``: every case gathered after a round
of rule writing, answered once with the rules of the commit before its batch came in.
``python -m tests.explain.corpus_score --readme`` rewrites ``track_record.toml`` from it, and a
test checks the two agree. Shown next to a diagnosis so a reader knows how far to trust its kind.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache
from importlib import resources

from torchsmith.explain.model import BASES, Basis
from torchsmith.util.toml import loads_toml

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Tally:
    answered: int  # failing logs whose first answer had this basis
    right: int  # of those, how many named the confirmed cause

    @property
    def share(self) -> float:
        return self.right / self.answered if self.answered else 0.0


@dataclass(frozen=True)
class TrackRecord:
    batches: int
    failing: int
    healthy: int
    silent_on_failing: int  # failing logs on which explain found nothing
    false_alarms: int  # healthy logs on which it found something
    by_basis: dict[Basis, Tally]


def parse_track_record(text: str) -> TrackRecord:
    data = loads_toml(text)
    table = data.get("basis", {})
    by_basis = {
        basis: Tally(int(table[basis]["answered"]), int(table[basis]["right"]))
        for basis in BASES
        if basis in table
    }
    return TrackRecord(
        batches=int(data["batches"]),
        failing=int(data["failing"]),
        healthy=int(data["healthy"]),
        silent_on_failing=int(data["silent_on_failing"]),
        false_alarms=int(data["false_alarms"]),
        by_basis=by_basis,
    )


@cache
def load_track_record() -> TrackRecord | None:
    """The shipped track record, or None when it is missing or unreadable (then no figure shows)."""
    try:
        shipped = resources.files("torchsmith.explain").joinpath("track_record.toml")
        return parse_track_record(shipped.read_text("utf-8"))
    except (OSError, KeyError, TypeError, ValueError) as exc:
        log.debug("no explain track record: %s", exc)
        return None
