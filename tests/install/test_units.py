"""Install's pure parts: index configuration, source choice, commands, landed checks, output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from torchsmith.errors import InputError, UsageError
from torchsmith.install import indexes, steps
from torchsmith.install.checks import check_landed
from torchsmith.install.envstate import Dist
from torchsmith.install.model import InstallResult, Requirement
from torchsmith.install.report import first_error, pip_origins
from torchsmith.plan.model import Recommendation
from torchsmith.probe.model import ArchSet, TorchInfo
from torchsmith.render.install import render_install

FIXTURES = Path(__file__).parent / "fixtures"
# `pip config list` on the CI machine, as it printed it.
PIP_CONFIG = """\
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.default-timeout='180'
:env:.disable-pip-version-check='1'
:env:.find-links='/opt/wheels'
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
"""
CPU = Recommendation(
    kind="cpu",
    torch="2.13.0",
    variant="cpu",
    index_url="https://download.pytorch.org/whl/cpu",
    companions={"torchvision": "0.28", "torchaudio": "2.11"},
)
CU130 = Recommendation(
    kind="wheel",
    torch="2.11.0",
    variant="cu130",
    index_url="https://download.pytorch.org/whl/cu130",
    companions={"torchvision": "0.26"},
)


def test_parse_pip_config_keeps_sources_and_where_they_came_from() -> None:
    config = indexes.parse_pip_config(PIP_CONFIG, {})
    assert config.index_url is None
    assert config.extra_index_urls == ("file:///opt/pypi/simple", "file:///opt/pypi-more/simple")
    assert config.find_links == ("/opt/wheels",)
    assert config.origin["/opt/wheels"] == "PIP_FIND_LINKS"  # the env scope wins, as in pip
    assert config.origin["file:///opt/pypi/simple"] == "pip config"
    assert not config.uv_configured
    assert indexes.parse_pip_config("", {"UV_INDEX_URL": "http://m/simple"}).uv_configured


def test_uv_gets_pip_config_as_flags_and_pip_only_overrides() -> None:
    config = indexes.parse_pip_config(PIP_CONFIG, {})
    uv = indexes.installer_args(config, "uv")
    assert uv == [
        "--extra-index-url", "file:///opt/pypi/simple",
        "--extra-index-url", "file:///opt/pypi-more/simple",
        "--find-links", "/opt/wheels",
        "--index-strategy", "unsafe-best-match",
    ]  # fmt: skip
    assert indexes.installer_args(config, "pip") == []
    over = indexes.with_overrides(config, index_url="http://mirror/simple", find_links=("/w",))
    assert indexes.installer_args(over, "pip") == [
        "--index-url", "http://mirror/simple", "--find-links", "/w",
    ]  # fmt: skip
    assert indexes.installer_args(over, "uv")[:2] == ["--index-url", "http://mirror/simple"]


def test_user_config_that_holds_the_exact_build_wins_over_the_plan_index(tmp_path: Path) -> None:
    (tmp_path / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    config = indexes.parse_pip_config(f"global.find-links='{tmp_path}'\n", {})
    chosen, why, local = steps.choose_sources(CPU, config, overridden=False)
    assert local == str(tmp_path)
    assert chosen.index_url is None
    assert "has torch 2.13.0+cpu" in why
    # another build only: the plan's index becomes the index, for torch and companions alike
    chosen, why, local = steps.choose_sources(CU130, config, overridden=False)
    assert local is None
    assert chosen.index_url == CU130.index_url
    assert chosen.origin[CU130.index_url] == "plan"
    assert indexes.installer_args(chosen, "pip") == ["--index-url", CU130.index_url]


def test_a_mirror_of_the_pytorch_index_in_the_user_config_is_used() -> None:
    config = indexes.parse_pip_config("global.index-url='http://mirror.corp/whl/cu130'\n", {})
    chosen, why, _ = steps.choose_sources(CU130, config, overridden=False)
    assert chosen.index_url == "http://mirror.corp/whl/cu130"
    assert why == "your index configuration"


def test_file_index_listing_counts_as_local(tmp_path: Path) -> None:
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "index.html").write_text(
        '<a href="../../files/torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl#sha256=3">'
        "torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl</a>"
    )
    config = indexes.IndexConfig(extra_index_urls=(tmp_path.as_uri(),))
    assert indexes.local_wheel(config, "torch", "2.14.1") == tmp_path.as_uri()
    assert indexes.local_wheel(config, "torch", "2.13.0") is None


def test_requirements_pin_the_build_and_companion_minors() -> None:
    reqs = steps.requirements(CPU, ("torchvision",), None, "plan")
    assert [r.spec for r in reqs] == ["torch==2.13.0+cpu", "torchvision==0.28.*"]
    with pytest.raises(UsageError, match="no torchaudio version"):
        steps.requirements(CU130, ("torchaudio",), None, "plan")
    with pytest.raises(UsageError, match="source build"):
        steps.torch_version(Recommendation("source", "2.9.0", None, None))


def test_install_commands_have_short_network_timeouts() -> None:
    reqs = [Requirement("torch", "torch==2.13.0+cpu", None, "")]
    uv = steps.install_step(
        "uv", uv="/u/uv", python="/v/python", reqs=reqs, index_args=[], report=None
    )
    assert uv.argv[:5] == ("/u/uv", "pip", "install", "--python", "/v/python")
    assert uv.env["UV_HTTP_TIMEOUT"] == steps.HTTP_TIMEOUT_S
    assert uv.env["UV_HTTP_RETRIES"] == "0"
    pip = steps.install_step(
        "pip", uv=None, python="/v/python", reqs=reqs, index_args=[], report=Path("/r.json")
    )
    assert pip.argv[:4] == ("/v/python", "-m", "pip", "install")
    assert "--retries" in pip.argv
    assert pip.argv[pip.argv.index("--retries") + 1] == "0"
    assert pip.argv[-2:] == ("--report", "/r.json")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "not a torchsmith plan"),
        ("garbage{", "not JSON"),
        ('{"schema": "torchsmith/plan", "data": {"recommendation": {}}}', "incomplete"),
    ],
)
def test_bad_plan_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        steps.load_plan_file(path)


def test_plan_file_round_trip(tmp_path: Path) -> None:
    from torchsmith.envelope import dumps, wrap  # noqa: PLC0415

    path = tmp_path / "plan.json"
    path.write_text(dumps(wrap("plan", {"recommendation": CU130})))
    assert steps.load_plan_file(path) == CU130
    assert steps.read_plan_file(path) == (CU130, [])
    error = {"severity": "error", "message": "driver too old", "fix": "update it"}
    warning = {"severity": "warning", "message": "m", "fix": "f"}
    path.write_text(dumps(wrap("plan", {"recommendation": CU130, "findings": [warning, error]})))
    assert steps.read_plan_file(path) == (CU130, [("driver too old", "update it")])


def _result(torch: str, *companions: str) -> InstallResult:
    reqs = [Requirement("torch", f"torch=={torch}", None, "")]
    reqs += [Requirement(c.split("=")[0], c, None, "") for c in companions]
    return InstallResult(
        "/v/python", "uv", "planned", torch, torch.rsplit("+", maxsplit=1)[-1], reqs
    )


def _dist(name: str, version: str) -> Dist:
    return Dist(name, version, f"/site/{name}-{version}.dist-info")


def test_a_cpu_torch_in_place_of_a_cuda_one_is_cpu_only_torch() -> None:
    info = TorchInfo(version="2.11.0+cpu", location="/site/torch", cuda=None)
    findings, _ = check_landed(
        _result("2.11.0+cu130"), info, {"torch": _dist("torch", "2.11.0+cpu")}
    )
    assert [f.category for f in findings] == ["cpu-only-torch"]
    assert findings[0].severity == "error"


def test_another_cuda_line_or_companion_is_a_companion_mismatch() -> None:
    info = TorchInfo(
        version="2.11.0+cu126", location="/t", cuda="12.6", archs=ArchSet(sass=("sm_90",))
    )
    findings, archs = check_landed(
        _result("2.11.0+cu130", "torchvision==0.26.*"),
        info,
        {"torch": _dist("torch", "2.11.0+cu126"), "torchvision": _dist("torchvision", "0.25.0")},
    )
    assert [f.category for f in findings] == ["companion-version-mismatch"] * 2
    assert archs == ["sm_90"]
    good = TorchInfo(version="2.11.0+cu130", location="/t", cuda="13.0")
    findings, _ = check_landed(
        _result("2.11.0+cu130", "torchvision==0.26.*"),
        good,
        {
            "torch": _dist("torch", "2.11.0+cu130"),
            "torchvision": _dist("torchvision", "0.26.0+cu130"),
        },
    )
    assert findings == []


def test_installer_failures_become_one_line() -> None:
    uv = first_error((FIXTURES / "uv-no-solution.txt").read_text())
    assert uv.startswith("No solution found when resolving dependencies: Because there is no")
    down = first_error((FIXTURES / "uv-unreachable.txt").read_text())
    assert "127.0.0.1:9" in down
    assert "Connection refused" in down
    pip = first_error((FIXTURES / "pip-no-match.txt").read_text())
    assert pip == "No matching distribution found for torchvision==0.99.*"
    assert "\n" not in uv + down + pip


def test_pip_report_names_each_package_origin() -> None:
    origins = pip_origins(FIXTURES / "pip-report-torch-2.13.0.json")
    assert origins["torch"].startswith("file:///opt/wheels/torch-2.13.0%2Bcpu")
    assert origins["jinja2"].startswith("file:///opt/")
    assert len(origins) == 10
    assert pip_origins(FIXTURES / "missing.json") == {}


def test_unreachable_index_answers_quickly() -> None:
    why = indexes.check_reachable("http://127.0.0.1:9/simple", timeout=2)
    assert why is not None
    assert "refused" in why.lower()
    assert indexes.check_reachable("file:///nonexistent/simple") is not None
    assert indexes.check_reachable("/opt") is None


def test_json_of_a_result_is_plain() -> None:
    from torchsmith.envelope import wrap  # noqa: PLC0415

    doc = wrap("install", _result("2.13.0+cpu"))
    assert json.loads(json.dumps(doc))["data"]["requirements"][0]["spec"] == "torch==2.13.0+cpu"


def test_a_rollback_dry_run_shows_no_empty_command_list_or_ledger_id() -> None:
    """audit: `install --rollback --dry-run` printed 'commands (nothing was changed):' with no
    command under it, and 'ledger ; snapshot ...' with no id."""
    result = InstallResult(
        python="/v/bin/python", installer="torchsmith", status="planned", torch=None,
        variant=None, snapshot="/snapshots/x", changed={"torch": ["2.13.0", None]},
    )  # fmt: skip
    console = Console(record=True, width=100)
    render_install(result, console)
    text = console.export_text()
    assert "commands" not in text
    assert "ledger" not in text
    assert "snapshot /snapshots/x" in text
