"""The kit checks the signed journal itself (issue 18): its own reading of the file, its
own tampering, its own view of fsync, in process and over the wire.

The two fakes of ``journal_fakes.py`` (unsigned lines with a verifier that compares with
a copy in memory; fsyncs of a padding file instead of the journal) once got CONFORMS;
they must fail, in process, over the wire, and on generated scenarios. The reference and
the JavaScript example must pass, and over the wire the durability rule is reported as
judged by declaration.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from seamspec.conformance import Runner, Scenario, ScenarioResult, load_adapter, load_scenarios
from seamspec.conformance._contracts.dispatch_recorder.journal_session import JournalSession
from seamspec.conformance._core.errors import ImplementationError
from seamspec.conformance._quality.fuzz import fuzz
from seamspec.conformance._wire.client import WireAdapter
from tests.journal_fakes import fake_adapter

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = "dispatch-recorder"
FAKES = Path(__file__).with_name("journal_fakes.py")
#: The rule each fake must be caught breaking (at least; others may fire too).
CAUGHT = {"unsigned": "DR-JOURNAL-FORMAT", "fsync-elsewhere": "DR-JOURNAL-DURABLE"}


def journal_scenarios() -> list[Scenario]:
    return [
        s for s in load_scenarios([ROOT / "scenarios" / CONTRACT]) if "signed-journal" in s.requires
    ]


def _broken(results: list[ScenarioResult]) -> set[str]:
    return {rule for r in results if r.is_failure for rule in r.broken_rules}


@pytest.mark.parametrize("mode", sorted(CAUGHT))
def test_fake_journal_fails_in_process(mode: str) -> None:
    run = Runner(fake_adapter(mode), timeout=30).run(
        load_scenarios([ROOT / "scenarios" / CONTRACT])
    )
    assert not run.ok
    assert CAUGHT[mode] in _broken(run.results)


@pytest.mark.parametrize("mode", sorted(CAUGHT))
def test_fake_journal_fails_over_the_wire(mode: str) -> None:
    with WireAdapter([sys.executable, str(FAKES), mode], request_timeout=30) as wire:
        run = Runner(wire, timeout=60).run(journal_scenarios())
        assert wire.protocol == 2
    assert not run.ok
    assert CAUGHT[mode] in _broken(run.results)


@pytest.mark.parametrize("mode", sorted(CAUGHT))
def test_fake_journal_fails_generated_scenarios(mode: str) -> None:
    # Whether a finding is reached is the question, not its smallest form: no shrinking.
    found = fuzz(fake_adapter(mode), CONTRACT, examples=100, seed=1, shrink=False)
    assert found is not None


def test_over_the_wire_durability_is_judged_by_declaration() -> None:
    scenarios = [s for s in journal_scenarios() if "DR-JOURNAL-DURABLE" in s.rules]
    assert scenarios
    with WireAdapter([sys.executable, "-m", "seamspec", "serve-reference"]) as wire:
        remote = Runner(wire, timeout=60).run(scenarios)
    assert remote.ok, [r.detail for r in remote.results if r.status != "pass"]
    for result in remote.results:
        assert [rule for rule, _ in result.caveats] == ["DR-JOURNAL-DURABLE"]
    local = Runner(load_adapter("reference"), timeout=30).run(scenarios)
    assert local.ok
    assert all(not r.caveats for r in local.results)


def test_protocol_1_still_works_and_skips_journal_scenarios_with_the_reason() -> None:
    scenarios = load_scenarios([ROOT / "scenarios" / CONTRACT])
    command = [sys.executable, "-m", "seamspec", "serve-reference", "--protocol", "1"]
    with WireAdapter(command) as wire:
        run = Runner(wire, timeout=60).run(scenarios)
        assert wire.protocol == 1
        assert wire.restarts == 0  # offering 2, refused, then 1: not a restart
    journal = [r for r in run.results if "signed-journal" in r.scenario.requires]
    others = [r for r in run.results if r not in journal]
    assert journal
    assert all(r.status == "skip" and "protocol 2" in r.detail for r in journal)
    assert all(r.status == "pass" for r in others), [r.detail for r in others if r.status != "pass"]


@pytest.fixture
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed")
    return found


def test_javascript_journal_passes_the_kits_own_check(node: str) -> None:
    command = [node, str(ROOT / "examples" / "js" / "seamspec-impl.mjs")]
    with WireAdapter(command) as wire:
        run = Runner(wire, timeout=60).run(journal_scenarios())
    assert run.ok, [r.detail for r in run.results if r.status != "pass"]
    checks = [e for r in run.results for e in r.trace or [] if e["type"] == "journal_check"]
    assert checks
    assert all(c["fsync_evidence"] == "declared" for c in checks)
    # A damaged existing journal is refused and left as the kit wrote it: it never verifies.
    # So is one whose last entry lost its newline: the example refuses it rather than
    # move the entry aside (DR-JOURNAL-REOPEN allows either).
    left = [c.get("existing_damaged") is not None or bool(c.get("existing_lost")) for c in checks]
    assert all(c["ok"] is not kept for c, kept in zip(checks, left, strict=True))
    assert any(c.get("existing_damaged") is not None for c in checks)
    assert any(c.get("existing_lost") for c in checks)


def test_an_implementation_cannot_write_the_kits_own_events(tmp_path: Path) -> None:
    (scenario,) = [
        s for s in journal_scenarios() if s.id == "dr-journal-records-durably-and-verifies"
    ]
    session = JournalSession(scenario.request(), tmp_path)
    forged = [{"type": "journal_check", "exists": True, "ok": True}]
    with pytest.raises(ImplementationError, match="only the kit"):
        session.finish(forged, lambda *args: {}, evidence="declared")


def test_the_kit_hands_out_a_key_only_its_owner_can_read(tmp_path: Path) -> None:
    (scenario,) = [
        s for s in journal_scenarios() if s.id == "dr-journal-records-durably-and-verifies"
    ]
    session = JournalSession(scenario.request(), tmp_path)
    request = session.implementation_request()
    assert [next(iter(step)) for step in request["when"]] == ["turn"]
    given = request["resources"]["journal"]
    assert Path(given["private_key"]).stat().st_mode & 0o077 == 0
    assert len(bytes.fromhex(given["public_key"])) == 32


def test_the_kit_never_follows_a_link_left_at_the_journal_path(tmp_path: Path) -> None:
    """Over the wire the implementation can write in the kit's folder: a symbolic link
    (or a FIFO) at the journal's path must not make the kit read or overwrite elsewhere."""
    (scenario,) = [s for s in journal_scenarios() if s.id == "dr-journal-deleted-entry-detected"]
    folder = tmp_path / "kit"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    session = JournalSession(scenario.request(), folder)
    session.path.symlink_to(victim)
    with pytest.raises(ImplementationError, match="symbolic link"):
        session.finish([], lambda *args: {}, evidence="declared")
    assert victim.read_text() == "precious\n"
    session.path.unlink()
    os.mkfifo(session.path)
    with pytest.raises(ImplementationError, match="not a regular file"):
        session.finish([], lambda *args: {}, evidence="declared")
