"""Property tests over the log reader and scanner: any bytes give a result or one clear line, and
scanning stays linear in the line (no line costs more than a bounded time)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz.contract import check_inprocess, run_main
from torchsmith.explain.engine import Explainer
from torchsmith.explain.normalize import clean_line
from torchsmith.explain.reader import chunks, open_log
from torchsmith.explain.rules import load_rules

RULES = load_rules()
EXAMPLES = [e for r in RULES for e in r.examples]
ANCHORS = sorted({a for r in RULES for a in r.anchors})
PER_LINE_SECONDS = 0.5  # a 4000-char line through every rule; linear patterns take ~10 ms

tokens = st.one_of(
    st.sampled_from(ANCHORS),
    st.sampled_from(["1", "9", "_", "a", "/", ".so", ":", " ", "-", "'", "sm_", "==", ":1", "(1"]),
    st.text(max_size=5),
)


@st.composite
def hostile_lines(draw: st.DrawFn) -> str:
    """A line built to make backtracking patterns slow: long runs and repeated tokens, with
    rule anchors and examples around them."""
    run = draw(tokens) * draw(st.integers(0, 1500))
    parts = [
        draw(st.sampled_from(EXAMPLES)),
        run,
        draw(tokens),
        run,
        draw(st.sampled_from(EXAMPLES)),
    ]
    order = draw(st.permutations(parts))
    return "".join(order[: draw(st.integers(1, len(order)))])


@given(hostile_lines())
@example("7" * 4000 + " with CUDA capability sm_120 is not compatible with the current PyTorch")
@example("_" * 4000 + "undefined symbol: _Z3foov")
@example("lib" * 1300 + ": cannot open shared object file")
@example("a " * 2000 + "depends on torch==2.1")
@example("a" + ":1" * 2000 + " error")  # found by the long run: generic.compile-error, 0.34 s
@example("a" + "(1" * 2000 + " error")
def test_every_rule_is_fast_on_hostile_lines(line: str) -> None:
    text = clean_line(line.encode("utf-8", "surrogatepass"))
    for rule in RULES:
        start = time.perf_counter()
        for pattern in (*rule.patterns, *rule.exclude):
            pattern.search(text)
        spent = time.perf_counter() - start
        assert spent < PER_LINE_SECONDS, f"{rule.id} took {spent:.2f} s on {line[:60]!r}..."


@given(st.lists(hostile_lines(), min_size=1, max_size=20))
def test_explainer_takes_any_lines(lines: list[str]) -> None:
    explainer = Explainer()
    explainer.feed("fuzz", ["\n".join(lines).encode("utf-8", "surrogatepass")])
    explainer.result()


@given(st.binary(max_size=4096))
@example(b"\xff\xfe" + "Killed\n".encode("utf-16-le"))
@example(b"\x00" * 100)
@example(b"\r" * 1000 + b"Killed")
def test_reader_takes_any_bytes(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.txt"
        path.write_bytes(raw)
        code, out, err = run_main("explain", "--json", str(path))
        check_inprocess(code, err, out)
        try:
            stream = open_log(str(path))
        except Exception as exc:  # noqa: BLE001 - the contract: only InputError
            assert type(exc).__name__ == "InputError", exc  # noqa: PT017
            return
        for chunk in chunks(stream, chunk_size=64):
            assert isinstance(chunk, bytes)
