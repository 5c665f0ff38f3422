"""Logs as people actually have them: colours, progress bars, CRLF, UTF-16, prefixes, junk."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from tests.explain.corpus_score import CORPUS
from torchsmith.errors import InputError
from torchsmith.explain import explain_files, explain_text
from torchsmith.explain.engine import Explainer, traceback_cut_at
from torchsmith.explain.normalize import clean_line
from torchsmith.explain.reader import chunks, open_log, sniff_encoding

OOM = (
    "RuntimeError: CUDA out of memory. Tried to allocate 844.00 MiB "
    "(GPU 0; 14.76 GiB total capacity)"
)
LOG = f"Epoch 1\nloading model\n{OOM}\ndone\n"


def _top(path: Path) -> tuple[str, int, str]:
    diagnosis = explain_files([str(path)]).diagnoses[0]
    return diagnosis.category, diagnosis.line, diagnosis.evidence[0]


def test_ansi_colours_are_removed(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text(f"ok\n\x1b[31m\x1b[1m{OOM}\x1b[0m\x1b[K\n")
    assert _top(log) == ("gpu-out-of-memory", 2, OOM)


def test_cr_progress_bar_keeps_last_segment(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_bytes(b"  0%|  | 0/9\r 50%|##| 4/9\r" + OOM.encode() + b"\r\nnext\r\n")
    assert _top(log) == ("gpu-out-of-memory", 1, OOM)
    assert clean_line(b"step 1\rstep 2\rfinal text\r\n") == "final text"


def test_crlf(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_bytes(LOG.replace("\n", "\r\n").encode())
    assert _top(log) == ("gpu-out-of-memory", 3, OOM)


@pytest.mark.parametrize(
    ("codec", "bom"),
    [
        ("utf-16-le", codecs.BOM_UTF16_LE),
        ("utf-16-be", codecs.BOM_UTF16_BE),
        ("utf-16-le", b""),
        ("utf-16-be", b""),
        ("utf-8", codecs.BOM_UTF8),
    ],
)
def test_encodings(tmp_path: Path, codec: str, bom: bytes) -> None:
    log = tmp_path / "log.txt"
    log.write_bytes(bom + LOG.replace("\n", "\r\n").encode(codec))
    assert _top(log) == ("gpu-out-of-memory", 3, OOM)
    assert explain_files([str(log)]).inputs[0].encoding == codec


def test_utf16_split_across_chunks(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_bytes(codecs.BOM_UTF16_LE + ("x" * 1001 + "\n" + LOG).encode("utf-16-le"))
    stream = open_log(str(log))
    explainer = Explainer()
    explainer.feed(stream.name, chunks(stream, chunk_size=333), stream.encoding)
    assert explainer.matches["memory.cuda-oom"].line == 4


@pytest.mark.parametrize(
    "prefix",
    [
        "2024-05-01T12:00:00.1234567Z ",
        "[12:00:01] ",
        "#9 1.385 ",
        "##[error]",
        "[2024-05-01 12:00:00] ",
        "19:38:40.130 ",  # torchsmith build's own log (util/stream.py)
    ],
)
def test_timestamp_prefixes(tmp_path: Path, prefix: str) -> None:
    log = tmp_path / "log.txt"
    log.write_text("".join(prefix + line + "\n" for line in LOG.splitlines()))
    assert _top(log) == ("gpu-out-of-memory", 3, OOM)


@pytest.mark.parametrize(
    "case",
    [
        "real-time-voice-cloning-172-no-module-torch",  # a next pattern over a traceback
        "threestudio-420-tinycudann-gcc11",
        "uv-12620-markupsafe-torch-index-cp313",
        "tiny-tensorrt-20-ld-cannot-find-lnvinfer",  # a tail rule would answer without the fix
    ],
)
def test_torchsmith_build_log_prefix_reads_like_the_plain_log(tmp_path: Path, case: str) -> None:
    # a configure CMake refused in torchsmith's own build log was not explained: its "12:00:01.123 "
    # prefix kept ^-anchored patterns from matching, and a line of only the prefix was not blank
    plain = (CORPUS / case / "log.txt").read_text(encoding="utf-8")
    log = tmp_path / "build.log"
    log.write_text("".join(f"19:38:40.130 {line}\n" for line in plain.splitlines()), "utf-8")
    want = [d.rule for d in explain_text(plain).diagnoses]
    assert [d.rule for d in explain_files([str(log)]).diagnoses] == want


def test_interleaved_parallel_output_and_small_chunks(tmp_path: Path) -> None:
    lines = [f"[{i}/900] c++ -c file{i}.cpp -Werror=return-type" for i in range(900)]
    lines.insert(500, "c++: fatal error: Killed signal terminated program cc1plus")
    lines.insert(700, OOM)
    log = tmp_path / "log.txt"
    log.write_text("\n".join(lines))  # no final newline
    stream = open_log(str(log))
    explainer = Explainer()
    explainer.feed(stream.name, chunks(stream, chunk_size=4096), stream.encoding)
    assert explainer.matches["memory.compiler-killed"].line == 501
    assert explainer.matches["memory.cuda-oom"].line == 701
    assert explainer.inputs[0].lines == 902


@pytest.mark.parametrize("chunk_size", [4096, 1 << 20])
def test_a_last_line_without_a_newline_is_read_as_the_line_after(
    tmp_path: Path, chunk_size: int
) -> None:
    # the last line was its own chunk, so a rule that needs it after its own line never saw it
    log = tmp_path / "log.txt"
    lines = [f"[{i}/900] ptxas info" for i in range(600)]
    lines += [
        "error: 'sm_103a' is not a recognized processor for this target (ignoring processor)",
        "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.shfl.sync.idx.i32",
    ]
    log.write_text("\n".join(lines))
    stream = open_log(str(log))
    explainer = Explainer()
    explainer.feed(stream.name, chunks(stream, chunk_size=chunk_size), stream.encoding)
    assert explainer.matches["toolkit.llvm-unknown-processor"].line == 601
    assert explainer.inputs[0].lines == 602


def test_bytes_done_follows_the_chunks_handed_out(tmp_path: Path) -> None:
    # review: the reader holds a chunk back, and progress told what it had read (a block ahead)
    log = tmp_path / "log.txt"
    line = "x" * 99 + "\n"
    log.write_text(line * 200 + "tail without newline")
    stream = open_log(str(log))
    handed = 0
    for chunk in chunks(stream, chunk_size=1000):
        handed += len(chunk)
        assert handed - len(line) <= stream.bytes_done <= handed + len(line)
    assert stream.bytes_done == log.stat().st_size


def test_line_longer_than_a_chunk(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("a" * 10000 + "\n" + LOG)
    stream = open_log(str(log))
    explainer = Explainer()
    explainer.feed(stream.name, chunks(stream, chunk_size=1000), stream.encoding)
    assert explainer.matches["memory.cuda-oom"].line == 4


def test_invalid_utf8_is_replaced(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_bytes(b"caf\xe9 \xff\xfe\n" + OOM.encode("latin-1") + b"\n")
    assert _top(log)[0] == "gpu-out-of-memory"


def test_binary_junk_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "model.bin"
    junk.write_bytes(bytes(range(256)) * 200 + b"\0" * 5000)
    with pytest.raises(InputError, match="binary data, not a text log"):
        explain_files([str(junk)])
    assert sniff_encoding(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0")[0] == "binary"


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        explain_files([str(tmp_path / "nope.log")])
    with pytest.raises(InputError, match="is a directory"):
        explain_files([str(tmp_path)])


def test_an_empty_file_is_bad_input_not_a_healthy_log(tmp_path: Path) -> None:
    log = tmp_path / "empty.log"
    log.write_bytes(b"")
    with pytest.raises(InputError, match="is empty"):
        explain_files([str(log)])


def test_several_files_name_the_file(tmp_path: Path) -> None:
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_text("all good\n")
    second.write_text(LOG)
    diagnosis = explain_files([str(first), str(second)]).diagnoses[0]
    assert (diagnosis.file, diagnosis.line) == (str(second), 3)


FRAME = '  File "/app/main.py", line 90, in <module>'
HEADER = "Traceback (most recent call last):"


@pytest.mark.parametrize(
    ("tail", "cut"),
    [
        (f"{HEADER}\n{FRAME}\n", 2),  # ends on a frame
        (f"{HEADER}\n{FRAME}\n    import execution\n", 3),  # on its source line
        (f"{HEADER}\n{FRAME}\n    run(x)\n    ^^^^^^\n\n", 4),  # on 3.11's carets
        (f"{HEADER}\n{FRAME}\n    a()\n{FRAME}\n{FRAME}\n    b()\n", 6),  # frames without source
        ("loading\n" + HEADER + "\n", 2),  # only the header
        (f"{HEADER}\n{FRAME}\n    import x\nImportError: no x\n", 0),  # whole
        (f'{HEADER}\n  File "<string>", line 1, in <module>\nModuleNotFoundError: no torch\n', 0),
        (f"Stack (most recent call last):\n{FRAME}\n    main()\n", 0),  # logging's stack_info
        (f"{FRAME}\n    main()\n{FRAME}\n    traceback.print_stack()\n", 0),  # no header
        (f"{FRAME}\nmodel loaded\n", 0),
        (f'{HEADER}\n{FRAME}\n    import x\n  File "/usr/lib/pyt\n', 4),  # stops in a frame
        (f'{HEADER}\n{FRAME}\n  File "/usr/lib/pyt\n    import x\n', 0),  # not as the last line
        (f'{HEADER}\n{FRAME}\n    import x\n  File "/x.py", li\n', 4),  # after the closing quote
        (f'{HEADER}\n{FRAME}\n    import x\n  File "/x.py"\n', 4),  # at the closing quote
        (f'{HEADER}\n{FRAME}\n    import x\nFile "config.yaml", not found\n', 0),
        ("Successfully installed torch-2.8.0\n", 0),
        ("", 0),
    ],
)
def test_a_log_that_ends_inside_a_traceback(tail: str, cut: int) -> None:
    assert traceback_cut_at(tail.encode(), tail.count("\n")) == cut
    result = explain_text(tail)
    assert result.inputs[0].traceback_cut_at == cut
    if cut and not result.diagnoses:
        assert not result.healthy
        assert "ends inside a Python traceback" in result.summary


def test_a_corroborating_line_leads_when_the_log_is_cut_inside_a_traceback() -> None:
    # pyannote-audio#855 in short: pip's conflict line alone is a run that went on; the same line
    # above a traceback the copy cut short is the cause of the failure it shows
    conflict = (
        "torchvision 0.13.0 requires torch==1.12.0, "
        "but you have torch 1.11.0 which is incompatible.\n"
    )
    assert not explain_text(conflict + "Successfully installed torch-1.11.0\n").diagnoses
    cut = explain_text(f'{conflict}{HEADER}\n{FRAME}\n    import x\n  File "/usr/lib/pyt')
    assert cut.inputs[0].traceback_cut_at
    assert [d.rule for d in cut.diagnoses] == ["install.companion-requires-torch"]


def test_the_cut_check_skips_a_partial_first_line_of_a_big_logs_tail() -> None:
    # the last bytes of a big log may begin inside a line: that piece is not read as a header
    tail = HEADER.encode() + b"\n" + FRAME.encode() + b"\n"
    assert traceback_cut_at(tail, 1000, complete=True) == 1000
    assert traceback_cut_at(tail, 1000, complete=False) == 0


def test_a_real_cut_log_is_not_called_healthy() -> None:
    # ComfyUI#4845 as stored: the traceback stops at an import, before "Torch not compiled with.."
    log = CORPUS / "comfyui-4845-cpu-torch-after-restart" / "log.txt"
    result = explain_files([str(log)])
    assert not result.healthy
    assert not result.diagnoses
    assert result.inputs[0].traceback_cut_at == 22
    # DirectML#168's frame line was wrapped by the reporter's terminal ("line \n4, in <module>"):
    # the check reads only well-formed tracebacks, so that log stays uncalled either way
    wrapped = CORPUS / "directml-168-pytorch-directml-torch-not-uninstalled" / "log.txt"
    assert explain_files([str(wrapped)]).inputs[0].traceback_cut_at == 0


RETRY = (
    "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after"
    " connection broken by 'NewConnectionError(\"Failed to establish a new connection: [Errno 111]"
    " Connection refused\")': /jp6/cu124/pillow/\n"
)


@pytest.mark.parametrize(
    "after",
    ["", "^C\n", "^CERROR: Operation cancelled by user\n", "Terminated\n", "\x1b[0m\n"],
    ids=["last", "ctrl-c", "pip-cancelled", "terminated", "colour-reset"],
)
def test_a_log_that_stops_while_pip_retries_failed(after: str) -> None:
    # jetson-containers#540 in short: the index was down and the copy stops at pip's retries (or
    # someone pressed Ctrl-C during them)
    stopped = explain_text("Looking in indexes: http://jetson.example/jp6/cu124\n" + RETRY + after)
    assert [d.rule for d in stopped.diagnoses] == ["install.index-unreachable"]


@pytest.mark.parametrize(
    "after",
    [
        "Collecting pillow\nSuccessfully installed pillow-11.0.0\n",
        "Requirement already satisfied: numpy\nRequirement already satisfied: six\n",
        "Collecting pillow\n  Downloading pillow.whl\nInstalling collected packages: pillow\n",
        "Saved ./numpy-2.1.0.whl\nSuccessfully downloaded numpy\n",
        "$ python train.py\nepoch 1 loss 0.3\nDone.\n",
    ],
)
def test_a_retry_with_lines_after_it_went_on(after: str) -> None:
    # only a retry that is the log's last line is how it ended (generic.ended-retrying, last_line)
    went_on = explain_text(RETRY + after)
    assert went_on.healthy
    assert not went_on.diagnoses


def test_a_cut_traceback_promotes_only_its_own_inputs_lines(tmp_path: Path) -> None:
    runtime = "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\n"
    note = tmp_path / "a.log"
    note.write_text(runtime + "built\n")
    cut = tmp_path / "b.log"
    cut.write_text(f"{HEADER}\n{FRAME}\n")
    result = explain_files([str(note), str(cut)])
    assert not result.diagnoses
    assert not result.healthy
    # a corroborating line of the cut input leads; the other input's run went on
    cut.write_text(f"  Attempting uninstall: torch\n{HEADER}\n{FRAME}\n")
    both = explain_files([str(note), str(cut)])
    assert [(d.rule, d.file) for d in both.diagnoses] == [("install.pip-replaces-torch", str(cut))]
    assert [i.traceback_cut_at for i in both.inputs] == [0, 3]
