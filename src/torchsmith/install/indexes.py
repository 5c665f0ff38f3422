"""Where packages come from: the user's own index configuration, overrides, and the plan's index.

pip reads pip.conf and PIP_* itself; uv does not read pip.conf, so the same configuration is
passed to uv as flags (unless the user configured uv through UV_* variables, which uv reads
itself). Reading the configuration changes nothing: ``pip config list`` runs under
torchsmith's own interpreter with bytecode writing off.
"""

from __future__ import annotations

import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from torchsmith.errors import ToolError
from torchsmith.util import cmd

PROBE_TIMEOUT_S = 3.0
UV_INDEX_VARS = (
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_EXTRA_INDEX_URL",
    "UV_INDEX",
    "UV_FIND_LINKS",
)
_CONFIG_LINE = re.compile(r"^(?P<scope>[^.]*)\.(?P<key>[a-z-]+)=(?P<value>.*)$")


class IndexUnreachableError(ToolError):
    """A package index or find-links location does not answer."""


@dataclass(frozen=True)
class IndexConfig:
    """The effective package sources, and where each came from (for the report)."""

    index_url: str | None = None  # None: the installer's default (PyPI)
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    origin: dict[str, str] = field(default_factory=dict)  # url/path -> "pip config", "--index-url"
    uv_configured: bool = False  # UV_* index variables set: uv reads them itself

    def sources(self) -> tuple[str, ...]:
        first = (self.index_url,) if self.index_url else ()
        return first + self.extra_index_urls + self.find_links


def read_user_config(environ: Mapping[str, str] | None = None) -> IndexConfig:
    """The index settings pip would use (pip.conf files and PIP_* variables)."""
    env = dict(os.environ if environ is None else environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        result = cmd.run([sys.executable, "-m", "pip", "config", "list"], timeout=20, env=env)
        text = result.stdout if result.ok else ""
    except (cmd.CommandTimeoutError, cmd.CommandNotFoundError):
        text = ""
    return parse_pip_config(text, env)


def parse_pip_config(text: str, environ: Mapping[str, str]) -> IndexConfig:
    """Parse ``pip config list`` output; later scopes (env) win over files, as in pip."""
    values: dict[str, tuple[str, str]] = {}
    lines = text.splitlines()
    ordered = [ln for ln in lines if not ln.startswith(":env:")]
    ordered += [ln for ln in lines if ln.startswith(":env:")]  # variables override files
    for line in ordered:
        found = _CONFIG_LINE.match(line.strip())
        if not found or found["scope"] not in (
            "global",
            "install",
            "download",
            ":env:",
            "site",
            "user",
        ):
            continue
        key = found["key"]
        if key not in ("index-url", "extra-index-url", "find-links", "no-index"):
            continue
        where = (
            "PIP_" + key.upper().replace("-", "_") if found["scope"] == ":env:" else "pip config"
        )
        values[key] = (found["value"].strip().strip("'\""), where)
    origin: dict[str, str] = {}

    def many(key: str) -> tuple[str, ...]:
        if key not in values:
            return ()
        text_value, where = values[key]
        items = tuple(v for v in text_value.split() if v)
        origin.update(dict.fromkeys(items, where))
        return items

    index = many("index-url")
    return IndexConfig(
        index_url=index[0] if index else None,
        extra_index_urls=many("extra-index-url"),
        find_links=many("find-links"),
        origin=origin,
        uv_configured=any(environ.get(v) for v in UV_INDEX_VARS),
    )


def with_overrides(
    config: IndexConfig, *, index_url: str | None, find_links: tuple[str, ...]
) -> IndexConfig:
    origin = dict(config.origin)
    if index_url:
        origin[index_url] = "--index-url"
    origin.update(dict.fromkeys(find_links, "--find-links"))
    return IndexConfig(
        index_url=index_url or config.index_url,
        extra_index_urls=config.extra_index_urls,
        find_links=config.find_links + tuple(f for f in find_links if f not in config.find_links),
        origin=origin,
        uv_configured=config.uv_configured,
    )


def local_wheel(config: IndexConfig, name: str, version: str) -> str | None:
    """The configured local source (find-links dir or file:// index) holding ``name==version``.

    ``version`` carries the local tag ("2.13.0+cpu"); only an exact match counts.
    """
    prefix = f"{name.replace('-', '_')}-{version}-"
    for source, names in _local_listings(config, name):
        if any(n.startswith(prefix) and n.endswith(".whl") for n in names):
            return source
    return None


def _local_listings(config: IndexConfig, name: str) -> Iterator[tuple[str, list[str]]]:
    """Each configured local source (find-links folders, file:// indexes) with the file names it
    lists for ``name``: a find-links folder's own files and its ``name`` folder, an index's
    ``name`` page."""
    for source in (
        config.find_links
        + config.extra_index_urls
        + ((config.index_url,) if config.index_url else ())
    ):
        path = _local_path(source)
        if path is None:
            continue
        candidates = [path, path / name] if source in config.find_links else [path / name]
        for folder in candidates:
            yield source, _listing(folder)


def local_versions(
    config: IndexConfig,
    name: str,
    tag: str | None,
    python_tag: str | None = None,
    platform: str | None = None,
) -> dict[str, str]:
    """Version -> the configured local source holding a wheel of ``name`` whose local version
    tag is ``tag`` ("cpu", "cu130"; None: untagged) and, when given, whose Python tag takes
    ``python_tag`` ("cp311"; "py3" wheels do too) and whose platform tag fits ``platform``
    (sysconfig's "linux-x86_64", "win-amd64", "macosx-11.0-arm64"), newest first: what an
    offline install could take instead of a version the sources lack."""
    found: dict[str, str] = {}
    stem = name.replace("-", "_")
    pattern = re.compile(
        rf"^{re.escape(stem)}-(?P<version>[^-]+)(?:-\d[^-]*)?-(?P<py>[^-]+)-[^-]+-(?P<plat>[^-]+)\.whl$"
    )
    for source, names in _local_listings(config, name):
        for entry in names:
            hit = pattern.match(entry)
            if hit is None:
                continue
            version = hit["version"]
            pys = hit["py"].split(".")
            fits = python_tag is None or python_tag in pys or "py3" in pys
            fits = fits and _platform_fits(hit["plat"], platform)
            if fits and (version.partition("+")[2] or None) == tag:
                found.setdefault(version, source)
    return dict(sorted(found.items(), key=lambda kv: _version_key(kv[0]), reverse=True))


def _platform_fits(wheel: str, platform: str | None) -> bool:
    """Whether a wheel's platform tags ("manylinux_2_28_x86_64", "win_amd64",
    "macosx_11_0_arm64", "any") can install on sysconfig's ``platform``; True when unknown."""
    if platform is None:
        return True
    system, _, machine = platform.partition("-")
    machine = machine.rsplit("-", 1)[-1]  # macosx-11.0-arm64 -> arm64
    for tag in wheel.split("."):
        if tag == "any":
            return True
        if system == "linux" and re.match(r"^(?:many|musl)?linux", tag) and tag.endswith(machine):
            return True
        if system == "win" and tag == f"win_{machine}":
            return True
        if (
            system == "macosx"
            and tag.startswith("macosx")
            and tag.endswith((machine, "universal2"))
        ):
            return True
    return False


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version.partition("+")[0])[:4])


def _listing(folder: Path) -> list[str]:
    if folder.is_dir():
        try:
            entries = [p.name for p in folder.iterdir()]
        except OSError:
            return []
        index = folder / "index.html"
        if index.is_file():
            entries += re.findall(r">([^<>]+\.whl)<", index.read_text(errors="replace"))
        return entries
    return []


def _local_path(source: str) -> Path | None:
    if source.startswith("file://"):
        return Path(urllib.parse.unquote(urllib.parse.urlparse(source).path))
    if "://" in source:
        return None
    return Path(source)


def check_reachable(url: str, *, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """None when ``url`` answers (any HTTP status below 500), else why not, in a few words."""
    path = _local_path(url)
    if path is not None:
        return None if path.exists() else f"{path} does not exist"
    request = urllib.request.Request(url.rstrip("/") + "/", method="HEAD")  # noqa: S310 (http(s) only)
    try:
        with urllib.request.urlopen(request, timeout=timeout):  # noqa: S310
            return None
    except urllib.error.HTTPError as exc:
        return None if exc.code < 500 else f"HTTP {exc.code}"
    except urllib.error.URLError as exc:
        reason = exc.reason
        return str(getattr(reason, "strerror", None) or reason)
    except (TimeoutError, OSError) as exc:
        return str(exc) or type(exc).__name__


def require_reachable(urls: Mapping[str, str], *, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Raise IndexUnreachableError for the first of ``urls`` (url -> where from) that is down."""
    for url, where in urls.items():
        why = check_reachable(url, timeout=timeout)
        if why is not None:
            raise IndexUnreachableError(
                f"index {url} ({where}) does not answer: {why}",
                tip="check the URL and your network, or pass --index-url/--find-links for a mirror",
            )


def installer_args(config: IndexConfig, installer: str) -> list[str]:
    """Flags that give the installer exactly ``config`` (pip reads its own config itself)."""
    args: list[str] = []
    if installer == "pip":
        # pip reads pip.conf/PIP_*; pass only what differs from it (overrides).
        for url, where in config.origin.items():
            if where in ("--index-url", "plan"):
                args += ["--index-url", url]
            elif where == "--find-links":
                args += ["--find-links", url]
        return args
    if config.uv_configured and not any(
        w in ("--index-url", "--find-links", "plan") for w in config.origin.values()
    ):
        return args
    if config.index_url:
        args += ["--index-url", config.index_url]
    for url in config.extra_index_urls:
        args += ["--extra-index-url", url]
    for link in config.find_links:
        args += ["--find-links", link]
    if len(config.sources()) > 1:
        args += ["--index-strategy", "unsafe-best-match"]  # pip's rule: best version anywhere
    return args
