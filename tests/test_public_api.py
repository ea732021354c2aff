"""The public names are exactly the ones meant to be public."""

from __future__ import annotations

import importlib
import importlib.util

import pytest

import seamspec.conformance
import seamspec.reference

EXPECTED_REFERENCE = {
    # dispatch recorder (DR)
    "Allow",
    "CallOutcome",
    "CommitFailed",
    "ContextInjection",
    "DOMAIN",
    "Decision",
    "Deny",
    "DispatchMutation",
    "DispatchPolicy",
    "DispatchRecorder",
    "InjectContext",
    "InputRewrite",
    "JournalCorrupt",
    "JournalEntry",
    "JournalLocked",
    "JournalRecorder",
    "KeyFileError",
    "KeySigner",
    "Message",
    "MutationKind",
    "OK",
    "Provider",
    "ProviderStep",
    "RecordError",
    "RecordOk",
    "RecordOutcome",
    "RecorderBase",
    "RequireApproval",
    "ResultRedaction",
    "RewriteArgs",
    "ScriptedProvider",
    "Signer",
    "SignerProcess",
    "SignerUnavailable",
    "ToolCall",
    "ToolExecutor",
    "ToolInvocation",
    "ToolRunner",
    "QuarantinedTailWarning",
    "TornTailWarning",
    "TurnResult",
    "Verification",
    "WITHHELD_NOTICE",
    "commit_step",
    "denial_text",
    "generate_keypair",
    "journal_fingerprint",
    "load_private_key",
    "load_public_key",
    "run_turn",
    "scan_journal",
    "ANNOTATION_SEPARATOR",
    "CheckpointObserver",
    "CommandFailed",
    "CommandRefused",
    "DiagnosticsObserver",
    "FormatterObserver",
    "InvocationIds",
    "ObservationSession",
    "ObserverFailure",
    "ObserverFailureWarning",
    "STUB_PROGRAMS",
    "SessionPhase",
    "ShellInvocationId",
    "ShellOutputObserver",
    "ShellOutputStream",
    "ShellResult",
    "ShellRunner",
    "ToolResult",
    "WriteObserver",
    "WriteObserverChain",
    "WriteTools",
    "as_shell_observer",
    "stub_command",
}


def test_reference_exports_exactly() -> None:
    assert set(seamspec.reference.__all__) == EXPECTED_REFERENCE
    assert len(seamspec.reference.__all__) == len(EXPECTED_REFERENCE)


@pytest.mark.parametrize("module", [seamspec.reference, seamspec.conformance])
def test_every_exported_name_exists_and_is_public(module: object) -> None:
    for name in module.__all__:  # type: ignore[attr-defined]
        assert hasattr(module, name), name
        obj = getattr(module, name)
        owner = getattr(obj, "__module__", "") or ""
        private = any(part.startswith("_") for part in owner.split(".")[1:])
        assert not owner.startswith("seamspec.") or private, (
            f"{name} should live in a private module and be re-exported"
        )


def test_conformance_has_no_public_names_outside_all() -> None:
    public = {n for n in vars(seamspec.conformance) if not n.startswith("_")}
    modules = {n for n in public if isinstance(getattr(seamspec.conformance, n), type(importlib))}
    assert public - modules - {"annotations"} == set(seamspec.conformance.__all__)


@pytest.mark.parametrize("bare", ["reference", "conformance", "scenarios"])
def test_no_bare_top_level_modules_are_installed(
    bare: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    from pathlib import Path

    # The repository root (where the source folders live) is not a place users import from.
    root = str(Path(__file__).parents[1])
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", root, ".")])
    assert importlib.util.find_spec(bare) is None


def test_exceptions_share_one_root_and_the_builtin() -> None:
    c = seamspec.conformance
    for cls, builtin in [
        (c.ScenarioError, ValueError),
        (c.CatalogueError, ValueError),
        (c.AdapterLoadError, ImportError),
        (c.ImplementationError, RuntimeError),
        (c.Unsupported, NotImplementedError),
    ]:
        assert issubclass(cls, c.SeamspecError)
        assert issubclass(cls, builtin)


def test_every_source_package_is_in_the_wheel() -> None:
    """A new room (a folder with ``__init__.py``) must be listed in pyproject's packages."""
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    repo = Path(__file__).parents[1]
    config = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    mapping = config["tool"]["setuptools"]["package-dir"]
    found = set()
    for package, folder in mapping.items():
        for init in (repo / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(repo / folder).parts
            if "__pycache__" not in parts:
                found.add(".".join((package, *parts)))
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
