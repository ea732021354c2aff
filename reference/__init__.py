"""seamspec's reference implementation of the interception seams it specifies.

The reference is small, readable code that passes the kit's own scenarios: the write tools
with their single observer seam, the observer chain, and the checkpoint, formatter and
diagnostics observers that the canonical chain is built from, plus the tiny child programs
that scenarios run. It exists so that every rule in the catalogue is backed by code that
demonstrably satisfies it, and so implementers have something concrete to compare with;
it is not meant to be the fastest or most featureful implementation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from seamspec.reference._dispatch_recorder.executor import (
    Allow,
    CallOutcome,
    Decision,
    Deny,
    DispatchPolicy,
    InjectContext,
    RequireApproval,
    RewriteArgs,
    ToolExecutor,
    ToolInvocation,
    ToolRunner,
)
from seamspec.reference._dispatch_recorder.journal import (
    JournalCorrupt,
    JournalLocked,
    JournalRecorder,
    QuarantinedTailWarning,
    TornTailWarning,
)
from seamspec.reference._dispatch_recorder.journal_format import (
    DOMAIN,
    JournalEntry,
    Verification,
    journal_fingerprint,
    scan_journal,
)
from seamspec.reference._dispatch_recorder.journal_keys import (
    KeyFileError,
    KeySigner,
    Signer,
    generate_keypair,
    load_private_key,
    load_public_key,
)
from seamspec.reference._dispatch_recorder.journal_signer import SignerProcess, SignerUnavailable
from seamspec.reference._dispatch_recorder.model import (
    OK,
    WITHHELD_NOTICE,
    ContextInjection,
    DispatchMutation,
    DispatchRecorder,
    InputRewrite,
    Message,
    MutationKind,
    RecorderBase,
    RecordError,
    RecordOk,
    RecordOutcome,
    ResultRedaction,
    ToolCall,
    commit_step,
    denial_text,
)
from seamspec.reference._dispatch_recorder.turn_loop import (
    CommitFailed,
    Provider,
    ProviderStep,
    ScriptedProvider,
    TurnResult,
    run_turn,
)
from seamspec.reference._shell_output.observer import (
    InvocationIds,
    ShellInvocationId,
    ShellOutputObserver,
    ShellOutputStream,
    as_shell_observer,
)
from seamspec.reference._shell_output.runner import (
    CommandFailed,
    CommandRefused,
    ShellResult,
    ShellRunner,
)
from seamspec.reference._shell_output.session import ObservationSession, SessionPhase
from seamspec.reference._write_observer_chain.chain import (
    ANNOTATION_SEPARATOR,
    ObserverFailure,
    ObserverFailureWarning,
    WriteObserver,
    WriteObserverChain,
)
from seamspec.reference._write_observer_chain.checkpoint import CheckpointObserver
from seamspec.reference._write_observer_chain.diagnostics import DiagnosticsObserver
from seamspec.reference._write_observer_chain.formatter import FormatterObserver
from seamspec.reference._write_observer_chain.write_path import ToolResult, WriteTools

if TYPE_CHECKING:
    from seamspec.reference._write_observer_chain.stubs import STUB_PROGRAMS, stub_command

__all__ = [
    "ANNOTATION_SEPARATOR",
    "DOMAIN",
    "OK",
    "STUB_PROGRAMS",
    "WITHHELD_NOTICE",
    "Allow",
    "CallOutcome",
    "CheckpointObserver",
    "CommandFailed",
    "CommandRefused",
    "CommitFailed",
    "ContextInjection",
    "Decision",
    "Deny",
    "DiagnosticsObserver",
    "DispatchMutation",
    "DispatchPolicy",
    "DispatchRecorder",
    "FormatterObserver",
    "InjectContext",
    "InputRewrite",
    "InvocationIds",
    "JournalCorrupt",
    "JournalEntry",
    "JournalLocked",
    "JournalRecorder",
    "KeyFileError",
    "KeySigner",
    "Message",
    "MutationKind",
    "ObservationSession",
    "ObserverFailure",
    "ObserverFailureWarning",
    "Provider",
    "ProviderStep",
    "QuarantinedTailWarning",
    "RecordError",
    "RecordOk",
    "RecordOutcome",
    "RecorderBase",
    "RequireApproval",
    "ResultRedaction",
    "RewriteArgs",
    "ScriptedProvider",
    "SessionPhase",
    "ShellInvocationId",
    "ShellOutputObserver",
    "ShellOutputStream",
    "ShellResult",
    "ShellRunner",
    "Signer",
    "SignerProcess",
    "SignerUnavailable",
    "ToolCall",
    "ToolExecutor",
    "ToolInvocation",
    "ToolResult",
    "ToolRunner",
    "TornTailWarning",
    "TurnResult",
    "Verification",
    "WriteObserver",
    "WriteObserverChain",
    "WriteTools",
    "as_shell_observer",
    "commit_step",
    "denial_text",
    "generate_keypair",
    "journal_fingerprint",
    "load_private_key",
    "load_public_key",
    "run_turn",
    "scan_journal",
    "stub_command",
]

_LAZY = frozenset({"STUB_PROGRAMS", "stub_command"})


def __getattr__(name: str) -> Any:
    # ``stubs`` is imported on first use only: ``python -m seamspec.reference._write_observer_chain.stubs``
    # imports this package first, and a package that had already imported the module
    # makes runpy print a RuntimeWarning on the stub's stderr.
    if name in _LAZY:
        from seamspec.reference._write_observer_chain import stubs as _stubs

        return getattr(_stubs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
