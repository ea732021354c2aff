"""Deliberately misbehaving adapters: the runner must turn each into a clear status."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from seamspec.conformance import ImplementationInfo, Trace, Unsupported

CONTRACTS = ("write-observer-chain",)


class _Fake:
    name = "fake"

    def info(self) -> ImplementationInfo:
        return ImplementationInfo(
            self.name,
            "python",
            "0",
            CONTRACTS,
            ("write-tools", "builtin-observers", "hook-time-limit"),
        )

    def close(self) -> None:
        pass

    def run(self, request: Mapping[str, Any]) -> Trace:
        raise NotImplementedError


class Crashing(_Fake):
    name = "crashing"

    def run(self, request: Mapping[str, Any]) -> Trace:
        raise RuntimeError("segfault-ish: the implementation fell over")


class Hanging(_Fake):
    name = "hanging"

    def run(self, request: Mapping[str, Any]) -> Trace:
        time.sleep(3600)
        return []


class Garbage(_Fake):
    name = "garbage"

    def run(self, request: Mapping[str, Any]) -> Trace:
        return "not a trace"  # type: ignore[return-value]


class NotJson(_Fake):
    name = "not-json"

    def run(self, request: Mapping[str, Any]) -> Trace:
        return [{"type": "hook_enter", "value": object()}]


class Declining(_Fake):
    name = "declining"

    def run(self, request: Mapping[str, Any]) -> Trace:
        raise Unsupported("this fake implements nothing")


class Silent(_Fake):
    """Returns an empty trace: every expectation and most oracle checks must fail."""

    name = "silent"

    def run(self, request: Mapping[str, Any]) -> Trace:
        return []


class NoContracts(_Fake):
    name = "no-contracts"

    def info(self) -> ImplementationInfo:
        return ImplementationInfo(self.name, "python", "0", ())


crashing = Crashing()
hanging = Hanging()
garbage = Garbage()
silent = Silent()
