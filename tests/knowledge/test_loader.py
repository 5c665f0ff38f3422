"""The validating loader: every fact has a known source; bad data is a KnowledgeError."""

from __future__ import annotations

import pytest

from torchsmith.errors import KnowledgeError
from torchsmith.knowledge import load_knowledge
from torchsmith.knowledge.loader import FILES, data_texts, parse
from torchsmith.util.toml import loads_toml


@pytest.fixture
def texts() -> dict[str, str]:
    return dict(data_texts())


def test_shipped_data_loads_and_is_cached() -> None:
    assert load_knowledge() is load_knowledge()


def test_every_shipped_fact_names_a_defined_source(texts: dict[str, str]) -> None:
    sources = set(loads_toml(texts["sources.toml"]))
    checked = 0

    def walk(node: object, where: str, fact: bool) -> None:
        nonlocal checked
        if isinstance(node, dict):
            if fact:
                assert "source" in node, f"{where} has no source"
                refs = node["source"] if isinstance(node["source"], list) else [node["source"]]
                assert set(refs) <= sources, f"{where} cites an unknown source"
                checked += 1
            return
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{where}[{i}]", fact=True)

    for name in FILES:
        if name == "sources.toml":
            continue
        doc = loads_toml(texts[name])
        for key, value in doc.items():
            if key == "toolkit":
                for version, table in value.items():
                    for group in ("driver", "targets", "host_compilers"):
                        walk(table[group], f"{name} {version}.{group}", fact=True)
            else:
                walk(value, f"{name} {key}", fact=False)
    assert checked > 500


def test_fact_without_source_fails(texts: dict[str, str]) -> None:
    texts["gpus.toml"] = texts["gpus.toml"].replace('source = "cuda_gpus"\n', "", 1)
    with pytest.raises(KnowledgeError, match=r"gpus.toml gpu\[\d+\]: fact has no source"):
        parse(texts)


def test_unknown_source_key_fails(texts: dict[str, str]) -> None:
    texts["torch_wheels.toml"] += (
        '\n[[wheel]]\ntorch = "2.99"\nvariant = "cu999"\nos = "linux"\narch = "x86_64"\n'
        'status = "unverified"\nsource = "my_blog"\n'
    )
    with pytest.raises(KnowledgeError, match="unknown source 'my_blog'"):
        parse(texts)


def test_toolkit_group_without_source_fails(texts: dict[str, str]) -> None:
    doc = texts["cuda_toolkits.toml"]
    start = doc.index('[toolkit."12.8".host_compilers]')
    end = doc.index('source = "host_config"', start)
    texts["cuda_toolkits.toml"] = doc[:end] + doc[end + len('source = "host_config"') :]
    with pytest.raises(KnowledgeError, match=r"toolkit\.12\.8\.host_compilers: fact has no source"):
        parse(texts)


def test_malformed_toml_is_a_knowledge_error(texts: dict[str, str]) -> None:
    texts["gpus.toml"] += "\n[[gpu]\nname = \n"
    with pytest.raises(KnowledgeError, match=r"gpus\.toml is not valid TOML"):
        parse(texts)


def test_missing_file_is_a_knowledge_error(texts: dict[str, str]) -> None:
    del texts["driver_compat.toml"]
    with pytest.raises(KnowledgeError, match=r"driver_compat\.toml is missing"):
        parse(texts)


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        ("gpus.toml", 'compute_capability = "12.0"', 'compute_capability = "twelve"', "malformed"),
        ("gpus.toml", 'kind = "desktop"', 'kind = "toaster"', "kind 'toaster'"),
        ("torch_wheels.toml", 'sass = ["sm_75"', 'sass = ["sm75"', "sass entry 'sm75'"),
        ("sources.toml", 'status = "primary"', 'status = "trust me"', "status 'trust me'"),
        ("torch_releases.toml", 'requires_python = ">=3.10"', 'requires_python = "3.10+"', "req"),
    ],
)
def test_malformed_values_fail(
    texts: dict[str, str], file: str, old: str, new: str, message: str
) -> None:
    assert old in texts[file]
    texts[file] = texts[file].replace(old, new, 1)
    with pytest.raises(KnowledgeError, match=message):
        parse(texts)


def test_duplicate_wheel_entry_fails(texts: dict[str, str]) -> None:
    doc = texts["torch_wheels.toml"]
    start = doc.index("[[wheel]]")
    end = doc.index("[[wheel]]", start + 1)
    texts["torch_wheels.toml"] = doc + "\n" + doc[start:end]
    with pytest.raises(KnowledgeError, match="duplicate entry"):
        parse(texts)


def test_sources_have_url_title_date_and_status() -> None:
    kb = load_knowledge()
    for source in kb.sources.values():
        assert source.url
        assert source.title
        assert source.date
        assert source.status in {
            "verified-binary",
            "primary",
            "build-script",
            "secondary",
            "unverified",
        }


@pytest.mark.parametrize("spec", ["~=3.25", "==3.25.*", ">3.24.99", "not a version"])
def test_a_cmake_range_needs_a_floor(texts: dict[str, str], spec: str) -> None:
    # audit: "~=3.25" loaded, then crashed the build configuration, which names the first CMake
    doc = texts["cuda_toolkits.toml"]
    texts["cuda_toolkits.toml"] = doc.replace('cmake = [">=3.25.0rc1"]', f'cmake = ["{spec}"]', 1)
    with pytest.raises(KnowledgeError, match=r"arch_suffix.{0,20}: cmake"):
        parse(texts)
