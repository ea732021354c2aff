"""The command-line parts of the wire protocol: ``run --impl-cmd``, ``serve-reference``, ``smoke``.

They live apart from ``_cli.py`` so that the protocol can grow without touching the main
command table; ``_cli.py`` only registers them.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from typing import Any

from rich.console import Console

from seamspec._output import command_line, count, seconds
from seamspec.conformance import (
    Adapter,
    Runner,
    Scenario,
    load_adapter,
    load_scenarios,
)
from seamspec.conformance._core.catalogue import CONTRACTS
from seamspec.conformance._wire.client import HandshakeError, WireAdapter

__all__ = [
    "AdapterSpec",
    "adapter_from_spec",
    "adapter_spec",
    "add_commands",
    "add_run_options",
    "cmd_serve_reference",
    "cmd_smoke",
    "make_adapter",
    "runner_timeout",
]

#: Extra time the in-process Runner allows beyond the wire limit, so the wire limit (which
#: kills and restarts the child) is always the one that fires.
_RUNNER_MARGIN = 30.0


def _add_wire_options(
    parser: argparse.ArgumentParser,
    max_restarts: int = 3,
    restarts_help: str = "restarts after a crash or hang before the remaining scenarios "
    "error at once",
) -> None:
    parser.add_argument(
        "--request-timeout",
        type=seconds,
        metavar="SECONDS",
        help="with --impl-cmd: time limit for one answer; the child is killed and restarted "
        "past it (default: --timeout)",
    )
    parser.add_argument(
        "--strict-protocol",
        action="store_true",
        help="with --impl-cmd: validate every message against the protocol's JSON Schemas",
    )
    parser.add_argument(
        "--max-restarts",
        type=count(0, 1000),
        default=max_restarts,
        metavar="N",
        help=f"with --impl-cmd: {restarts_help} (default {max_restarts})",
    )


def add_run_options(
    run: argparse.ArgumentParser, impl: argparse._MutuallyExclusiveGroup, **restarts: Any
) -> None:
    """``--impl-cmd`` (exclusive with ``--impl``) and its options, on ``run`` and ``fuzz``.

    ``restarts``: ``max_restarts`` and ``restarts_help``, for a command whose restarts
    mean something else (fuzz replays a crash many times while it shrinks it).
    """
    impl.add_argument(
        "--impl-cmd",
        type=command_line,
        metavar="COMMAND",
        help="a command that starts an implementation speaking the wire protocol "
        '(docs/protocol.md), e.g. "node examples/js/seamspec-impl.mjs"',
    )
    _add_wire_options(run, **restarts)


def add_commands(sub: Any) -> None:
    """Register ``serve-reference`` and ``smoke`` on the main command table."""
    serve = sub.add_parser(
        "serve-reference",
        help="serve the reference implementation over the wire protocol on stdin/stdout",
    )
    served = serve.add_mutually_exclusive_group()
    served.add_argument(
        "--backend",
        choices=("asyncio", "trio"),
        default="asyncio",
        help="the event loop the reference runs on",
    )
    served.add_argument(
        "--impl",
        metavar="X",
        help="serve this in-process implementation instead (as for run: mutant:NAME, "
        "package.module:attribute); e.g. a mutant, to watch a wire-side tool catch it",
    )
    serve.add_argument(
        "--protocol",
        type=int,
        choices=(1, 2),
        default=None,
        help="speak only this protocol version (default: every version the kit speaks); "
        "1 shows how the kit treats an implementation that speaks only version 1",
    )
    serve.set_defaults(func=cmd_serve_reference)
    smoke = sub.add_parser(
        "smoke",
        help="check a new wire implementation: handshake, one scenario per contract, clean stop",
    )
    smoke.add_argument(
        "--impl-cmd",
        type=command_line,
        required=True,
        metavar="COMMAND",
        help="the command that starts the implementation (required)",
    )
    smoke.add_argument(
        "--timeout",
        type=seconds,
        default=60.0,
        metavar="SECONDS",
        help="time limit for one scenario",
    )
    _add_wire_options(smoke)
    smoke.set_defaults(func=cmd_smoke)


def _terminate_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit, so ``finally`` blocks kill the child's process group.

    Unless SIGTERM is handled already (the ``seamspec`` command does, in _signals.py).
    """
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    ):

        def stop(signum: int, _frame: object) -> None:
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, stop)


def _argv(command: str) -> list[str]:
    return shlex.split(command)


def make_adapter(args: argparse.Namespace) -> Adapter:
    """The adapter ``run`` judges: ``--impl-cmd`` over the wire, else ``--impl`` in process."""
    return adapter_from_spec(adapter_spec(args))


#: What a worker process needs to build its own adapter (picklable, unlike an adapter):
#: ``("impl", name)`` or ``("cmd", argv, request_timeout, max_restarts, strict)``.
AdapterSpec = tuple[Any, ...]


def adapter_spec(args: argparse.Namespace) -> AdapterSpec:
    """How to build the adapter ``args`` ask for, in this process or in a worker."""
    if getattr(args, "impl_cmd", None) is not None:
        return (
            "cmd", _argv(args.impl_cmd), args.request_timeout or args.timeout,
            args.max_restarts, args.strict_protocol,
        )  # fmt: skip
    return ("impl", args.impl)


def adapter_from_spec(spec: AdapterSpec) -> Adapter:
    """Build an adapter from :func:`adapter_spec`; with ``-j``, each worker builds its own
    (for ``--impl-cmd``, its own child implementation)."""
    if spec[0] == "cmd":
        return _wire_adapter(*spec[1:])
    return load_adapter(spec[1])


def _wire_adapter(
    argv: list[str], request_timeout: float, max_restarts: int, strict: bool
) -> WireAdapter:
    _terminate_on_sigterm()
    return WireAdapter(
        argv, request_timeout=request_timeout, max_restarts=max_restarts, strict=strict
    )


def runner_timeout(args: argparse.Namespace) -> float:
    """The Runner's own limit: for a wire implementation, a margin above the wire limit."""
    if getattr(args, "impl_cmd", None) is not None:
        return float(args.request_timeout or args.timeout) + _RUNNER_MARGIN
    return float(args.timeout)


def cmd_serve_reference(args: argparse.Namespace, _console: Console) -> int:
    """Serve the in-process reference (every contract it declares), or ``--impl``, on stdin/stdout."""
    from seamspec.conformance._implementations import reference_adapter, trio_adapter
    from seamspec.conformance._wire.messages import PROTOCOL_VERSIONS
    from seamspec.conformance._wire.server import protect_stdout, serve

    if args.impl is not None:
        adapter = load_adapter(args.impl)  # a bad name is a usage error, before stdout is taken
        out = protect_stdout()
    else:
        out = protect_stdout()
        adapter = trio_adapter() if args.backend == "trio" else reference_adapter(args.backend)
    try:
        protocols = (args.protocol,) if args.protocol else PROTOCOL_VERSIONS
        return serve(adapter, sys.stdin.buffer, out, protocols=protocols)
    except KeyboardInterrupt:
        return 130
    finally:
        adapter.close()


def _trivial(scenarios: list[Scenario], contract: str, features: tuple[str, ...]) -> Scenario:
    """The simplest scenario of ``contract`` the implementation can run: fewest steps."""
    mine = [s for s in scenarios if s.contract == contract]
    usable = [s for s in mine if set(s.requires) <= set(features)] or mine
    return min(usable, key=lambda s: (len(s.requires), len(s.when), len(str(s.given)), s.id))


def cmd_smoke(args: argparse.Namespace, console: Console) -> int:
    """Say exactly what is wrong with a new implementation, one check at a time."""
    from seamspec._run_scope import run_scope

    with run_scope():
        return _smoke(args, console)


def _smoke(args: argparse.Namespace, console: Console) -> int:
    problems = 0

    def report(ok: bool, what: str, detail: str = "") -> None:
        nonlocal problems
        problems += not ok
        mark = "[green]ok  [/]" if ok else "[red]FAIL[/]"
        console.print(f"{mark} {what}", highlight=False)
        for line in detail.splitlines():
            console.print(f"       {line}", highlight=False, markup=False)

    adapter = _wire_adapter(
        _argv(args.impl_cmd), args.request_timeout or args.timeout, args.max_restarts, True
    )
    try:
        try:
            info = adapter.info()
        except HandshakeError as error:
            report(False, "handshake", str(error))
            return 1
        report(
            True,
            f"handshake: {info.name} {info.version} ({info.language}); contracts: "
            f"{', '.join(info.contracts) or 'none'}; features: {', '.join(info.features) or 'none'}",
        )
        unknown = [c for c in info.contracts if c not in CONTRACTS]
        if unknown:
            report(False, f"unknown contract(s) {unknown}; this kit knows {list(CONTRACTS)}")
        scenarios = load_scenarios()
        known = [c for c in info.contracts if c in CONTRACTS]
        if not known:
            report(False, "the implementation declares no contract this kit can check")
        for contract in known:
            if not any(s.contract == contract for s in scenarios):
                report(True, f"{contract}: no scenarios shipped yet")
                continue
            scenario = _trivial(scenarios, contract, info.features)
            result = Runner(adapter, timeout=runner_timeout(args)).run_one(scenario)
            if result.status == "pass":
                report(True, f"{contract}: {scenario.id} passed")
            else:
                report(
                    False,
                    f"{contract}: {scenario.id} {result.status}",
                    result.detail + f"\n(scenario file: {scenario.source})",
                )
    finally:
        adapter.close()
    clean = adapter.exit_code == 0
    report(
        clean,
        "stop: exited with code 0"
        if clean
        else f"stop: the implementation did not exit with code 0 within the grace period after "
        f"the stop message (exit code: {adapter.exit_code}; None means it had to be killed)",
    )
    console.print(
        "smoke: all checks passed" if not problems else f"smoke: {problems} problem(s)",
        style="green" if not problems else "red",
    )
    return 0 if not problems else 1
