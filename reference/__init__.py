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

from ._checkpoint import CheckpointObserver
from ._diagnostics import DiagnosticsObserver
from ._dispatch_executor import (
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
from ._dispatch_model import (
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
from ._formatter import FormatterObserver
from ._journal import JournalCorrupt, JournalLocked, JournalRecorder, TornTailWarning
from ._journal_format import DOMAIN, JournalEntry, Verification, scan_journal
from ._journal_keys import (
    KeyFileError,
    KeySigner,
    Signer,
    generate_keypair,
    load_private_key,
    load_public_key,
)
from ._journal_signer import SignerProcess, SignerUnavailable
from ._shell_observer import (
    InvocationIds,
    ShellInvocationId,
    ShellOutputObserver,
    ShellOutputStream,
    as_shell_observer,
)
from ._shell_runner import CommandFailed, CommandRefused, ShellResult, ShellRunner
from ._shell_session import ObservationSession, SessionPhase
from ._turn_loop import (
    CommitFailed,
    Provider,
    ProviderStep,
    ScriptedProvider,
    TurnResult,
    run_turn,
)
from ._write_observer import (
    ANNOTATION_SEPARATOR,
    ObserverFailure,
    ObserverFailureWarning,
    WriteObserver,
    WriteObserverChain,
)
from ._write_path import ToolResult, WriteTools

if TYPE_CHECKING:
    from ._stubs import STUB_PROGRAMS, stub_command

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
    "load_private_key",
    "load_public_key",
    "run_turn",
    "scan_journal",
    "stub_command",
]

_LAZY = frozenset({"STUB_PROGRAMS", "stub_command"})


def __getattr__(name: str) -> Any:
    # ``_stubs`` is imported on first use only: ``python -m seamspec.reference._stubs``
    # imports this package first, and a package that had already imported the module
    # makes runpy print a RuntimeWarning on the stub's stderr.
    if name in _LAZY:
        from . import _stubs

        return getattr(_stubs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
