"""What a diagnosis rests on (``basis``) and how explain says how sure it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchsmith.cli import main
from torchsmith.explain import explain_text
from torchsmith.explain.track_record import Tally, TrackRecord, parse_track_record
from torchsmith.render.explain import how_sure

NOT_AVAILABLE = ">>> import torch\n>>> torch.cuda.is_available()\nFalse\n"
CPU_BUILD = "AssertionError: Torch not compiled with CUDA enabled\n"
ENDED = "loading the model\n[2023-03-07 09:00:00.361] [error] Unable to open the model file\n"
RECORD = TrackRecord(
    batches=2,
    failing=10,
    healthy=3,
    silent_on_failing=2,
    false_alarms=0,
    by_basis={"cause": Tally(6, 5), "symptom": Tally(2, 1)},
)


def test_each_kind_of_rule_gives_its_basis() -> None:
    assert explain_text(CPU_BUILD).diagnoses[0].basis == "cause"
    assert explain_text(NOT_AVAILABLE).diagnoses[0].basis == "symptom"
    assert explain_text(ENDED).diagnoses[0].basis == "ended-in-error"


def test_how_sure_gives_the_record_of_that_kind_and_asks_the_machine_for_a_symptom() -> None:
    cause = how_sure("cause", RECORD, None)
    assert "names this cause" in cause
    assert "right on 5 of 6" in cause
    assert "(83%)" in cause
    assert "--here" not in cause
    symptom = how_sure("symptom", RECORD, None)
    assert "right on 1 of 2" in symptom
    assert "torchsmith explain --here" in symptom
    # with the machine's facts given, there is nothing more to ask for
    assert "--here" not in how_sure("symptom", RECORD, "probe file x.json")
    # a kind without a record, or no record at all: the basis alone
    assert how_sure("generic", RECORD, None) == how_sure("generic", None, None)
    assert "right on" not in how_sure("machine", RECORD, None)


def test_cli_shows_how_sure_and_the_silence_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    log = tmp_path / "log.txt"
    log.write_text(NOT_AVAILABLE)
    main(["explain", str(log)])
    out = capsys.readouterr().out
    assert "how sure: The log shows a consequence, not its cause." in out
    assert "torchsmith explain --here" in out
    log.write_text("epoch 1 loss 0.3\ndone\n")
    assert main(["explain", str(log)]) == 0
    out = capsys.readouterr().out
    assert "explain found nothing on" in out
    assert "torchsmith doctor" in out
    main(["explain", "--json", str(log)])
    assert json.loads(capsys.readouterr().out)["data"]["healthy"] is True


def test_a_broken_track_record_is_refused() -> None:
    with pytest.raises((KeyError, ValueError)):
        parse_track_record("batches = 1\n")
