"""The wire protocol carries everything a verdict needs, and its schemas say what it is.

The reference judged in process and through ``seamspec serve-reference`` must get the
same verdict on every scenario; the JavaScript example must get the verdicts its
known-failures file admits; and the commands adapter authors use must say clearly what
is right and what is wrong.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from seamspec._cli import main
from seamspec.conformance import Runner, RunResult, Scenario, load_scenarios
from seamspec.conformance._implementations import reference_adapter
from seamspec.conformance._wire.client import WireAdapter
from seamspec.conformance._wire.messages import (
    KIT_MESSAGES,
    RESPONSES,
    ProtocolError,
    decode_line,
    message_schema,
)

ROOT = Path(__file__).resolve().parent.parent
JS_IMPL = ROOT / "examples" / "js" / "seamspec-impl.mjs"
SERVE = [sys.executable, "-m", "seamspec", "serve-reference"]
FAKE = [sys.executable, str(Path(__file__).parent / "wire_fakes" / "fake_impl.py")]
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def verdicts(result: RunResult) -> dict[str, tuple[str, list[str]]]:
    return {r.scenario.id: (r.status, r.broken_rules) for r in result.results}


def test_same_verdicts_in_process_and_over_the_wire() -> None:
    """The whole suite, over the wire in three children side by side (each scenario as
    one child answers it, one at a time), against the reference in process."""
    scenarios = load_scenarios()
    local = Runner(reference_adapter()).run(scenarios, jobs=8)

    def over_the_wire(part: list[Scenario]) -> tuple[RunResult, int | None]:
        with WireAdapter(SERVE, strict=True) as wire:
            result = Runner(wire).run(part)
            assert wire.info() == reference_adapter().info()
        return result, wire.exit_code

    with ThreadPoolExecutor(3) as pool:
        parts = list(pool.map(over_the_wire, [scenarios[i::3] for i in range(3)]))
    remote = {k: v for result, _ in parts for k, v in verdicts(result).items()}
    assert remote == verdicts(local)
    assert len(remote) == len(scenarios) > 0
    assert [code for _, code in parts] == [0, 0, 0]  # serve-reference stops cleanly on `stop`


def test_serve_reference_declares_every_contract_of_the_reference() -> None:
    with WireAdapter(SERVE) as wire:
        declared = wire.info()
    assert declared.contracts == reference_adapter().info().contracts
    assert declared.features == reference_adapter().info().features


@pytest.mark.parametrize("name", [*KIT_MESSAGES, "started", *RESPONSES])
def test_schemas_are_valid_and_shipped(name: str) -> None:
    schema = message_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    shipped = resources.files("seamspec.conformance").joinpath(
        f"schemas/protocol/{name}.schema.json"
    )
    assert shipped.is_file()
    assert schema["properties"]["type"] == {"const": name}


def test_the_run_message_never_carries_then() -> None:
    scenario = load_scenarios()[0]
    message: dict[str, Any] = {"type": "run", "seq": 1, "request": scenario.request()}
    jsonschema.validate(message, message_schema("run"))
    message["request"]["then"] = scenario.then
    with pytest.raises(jsonschema.ValidationError, match="then"):
        jsonschema.validate(message, message_schema("run"))


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        (b"\xff\xfe\n", "not UTF-8"),
        (b"[1, 2]\n", "must be a JSON object, not a list"),
        (b'{"type": "hello"}\n', "'hello' is not a protocol message type"),
        (b'{"type": "start", "protocol": 1}\n', "not allowed here"),
        (b'{"type": "skip", "seq": 1, "reason": 3}\n', "needs 'reason' as str"),
        (b'{"type": "trace", "seq": true, "trace": []}\n', "breaks its schema at seq"),
    ],
)
def test_decode_line_rejects(line: bytes, needle: str) -> None:
    strict = b"true" in line
    with pytest.raises(ProtocolError, match=needle):
        decode_line(line, expected=RESPONSES, strict=strict)


def _js_report(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "js.json"
    code = main(
        [
            "run",
            "-q",
            "--impl-cmd",
            f"node {JS_IMPL}",
            "--strict-protocol",
            "--report-json",
            str(path),
        ]
    )
    report: dict[str, Any] = json.loads(path.read_text())
    report["exit_code"] = code
    return report


@needs_node
def test_javascript_example_is_judged_honestly(tmp_path: Path) -> None:
    report = _js_report(tmp_path)
    known_file = yaml.safe_load((ROOT / "examples" / "js" / "known-failures.yaml").read_text())
    known = set((known_file or {}).get("expected_failures") or {})
    bad = {r["scenario"] for r in report["results"] if r["status"] in ("fail", "error")}
    assert bad == known
    assert report["implementation"]["language"] == "javascript"
    by_status: dict[str, set[str]] = {}
    for r in report["results"]:
        by_status.setdefault(r["status"], set()).add(r["contract"])
    assert {"write-observer-chain", "dispatch-recorder"} <= by_status["pass"]
    skipped = {r["scenario"] for r in report["results"] if r["status"] == "skip"}
    undeclared = {
        s.id
        for s in load_scenarios()
        if s.contract not in report["implementation"]["contracts"]
        or "builtin-observers" in s.requires
    }
    assert skipped == undeclared  # what it does not declare is skipped, never failed
    assert report["summary"]["passed"] >= 100


@needs_node
def test_javascript_unit_tests() -> None:
    done = subprocess.run(
        ["node", "--test", str(JS_IMPL.parent / "test")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout


def test_impl_and_impl_cmd_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["run", "--impl", "reference-trio", "--impl-cmd", "x"])
    assert caught.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_handshake_failure_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "-q", "--impl-cmd", " ".join([*FAKE, "wrong-version"])])
    assert code == 2
    assert "speaks protocol version 99" in " ".join(capsys.readouterr().err.split())


def _smoke(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "seamspec", "smoke", "--impl-cmd", command],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_smoke_passes_the_reference() -> None:
    done = _smoke(" ".join(SERVE))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "handshake: seamspec-reference-asyncio" in done.stdout
    assert "write-observer-chain: " in done.stdout
    assert "stop: exited with code 0" in done.stdout
    assert "smoke: all checks passed" in done.stdout


@needs_node
def test_smoke_passes_the_javascript_example() -> None:
    done = _smoke(f"node {JS_IMPL}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(javascript)" in done.stdout


@pytest.mark.parametrize(
    ("mode", "needle"),
    [
        ("wrong-version", "speaks protocol version 99"),
        ("garbage", "the line is not JSON"),
        ("crash", "exited with code 3"),
    ],
)
def test_smoke_says_what_is_wrong(mode: str, needle: str) -> None:
    done = _smoke(" ".join([*FAKE, mode]))
    assert done.returncode == 1
    assert "FAIL" in done.stdout
    assert needle in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--impl-cmd", "", "-q"], "--impl-cmd is empty"),
    ],
)
def test_wire_usage_errors(
    extra: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", *extra]) == 2
    assert needle in " ".join(capsys.readouterr().err.split())


def test_parallel_run_over_the_wire_matches_and_leaves_no_child(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-j 2 --impl-cmd``: each worker starts its own implementation; the verdicts are
    those of a serial run, and every child is gone once the run returns."""
    # A marker in the children's environment tells them apart from serve-reference
    # processes that other tests (in other xdist workers) may be running right now.
    marker = f"SEAMSPEC_TEST_MARKER={uuid.uuid4().hex}"
    command = " ".join(["env", marker, *SERVE])
    reports = [tmp_path / "serial.json", tmp_path / "parallel.json"]
    common = ["run", "-q", "-k", "woc-join", "--impl-cmd", command]
    assert main([*common, "--report-json", str(reports[0])]) == 0
    assert main([*common, "-j", "2", "--report-json", str(reports[1])]) == 0
    capsys.readouterr()
    statuses = [
        sorted((r["scenario"], r["status"]) for r in json.loads(p.read_text())["results"])
        for p in reports
    ]
    assert statuses[0] == statuses[1]
    assert len(statuses[0]) > 0
    leftovers = [pid for pid in Path("/proc").iterdir() if pid.name.isdigit() and _has(pid, marker)]
    assert not leftovers, f"children left behind: {leftovers}"


def _has(pid: Path, marker: str) -> bool:
    try:
        return marker.encode() in (pid / "environ").read_bytes().split(b"\0")
    except OSError:
        return False
