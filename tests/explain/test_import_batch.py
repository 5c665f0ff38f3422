"""The corpus import tool: checked cases go to one of two batches by slug; bad ones stay out."""

from __future__ import annotations

from pathlib import Path

from tests.explain.import_batch import half, main
from torchsmith.util.toml import loads_toml

CASE = """source = "https://github.com/example/repo/issues/{n}"
category = "{category}"
confirmed_by = "reporter: 'fixed by reinstalling'"
platform = "linux"
tool = "pip"
healthy = false
split = "heldout"
batch = "after-rules-x"
notes = "a note"
"""


def stage_case(stage: Path, slug: str, n: int, category: str = "cpu-only-torch") -> None:
    case = stage / "g1" / slug
    case.mkdir(parents=True)
    (case / "log.txt").write_text("AssertionError: Torch not compiled with CUDA enabled\n")
    (case / "case.toml").write_text(CASE.format(n=n, category=category))


def test_cases_split_by_slug_and_bad_ones_are_skipped(tmp_path: Path) -> None:
    stage, sealed = tmp_path / "stage", tmp_path / "sealed"
    stage_case(tmp_path / "before", "repo-0-already-here", 0)
    corpus = tmp_path / "before" / "g1"  # a corpus holding one case, of issue 0
    slugs = []
    for n in range(1, 8):
        slugs.append(f"repo-{n}-case")
        stage_case(stage, slugs[-1], n)
    stage_case(stage, "repo-99-bad-category", 99, category="not-a-category")
    # two logs of one thread may both come in, but not a thread the corpus already holds
    stage_case(stage, "repo-97-same-thread", 7)
    slugs.append("repo-97-same-thread")
    stage_case(stage, "repo-98-known-source", 0)

    rc = main([str(stage), "first", "second", str(sealed), "--corpus", str(corpus)])

    assert rc == 1
    for slug in slugs:
        where, batch = (corpus, "first") if half(slug) == 0 else (sealed, "second")
        meta = loads_toml((where / slug / "case.toml").read_text())
        assert (meta["split"], meta["batch"], meta["notes"]) == ("heldout", batch, "a note")
    assert {0, 1} == {half(s) for s in slugs}
    assert not (corpus / "repo-99-bad-category").exists()
    assert not (sealed / "repo-99-bad-category").exists()
    assert not (corpus / "repo-98-known-source").exists()
    assert not (sealed / "repo-98-known-source").exists()
