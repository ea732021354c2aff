"""Per-contract plug points: the scenario linter, the oracle and the expectation judge.

Adding a contract means adding one entry here; the loader, runner and reports never
switch on contract names themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

__all__ = ["ContractJudge", "contract_judges", "contract_linters"]

Linter = Callable[[dict[str, Any]], list[tuple[tuple[str | int, ...], str]]]
# (scenario request incl. given/when, then, trace) -> list of (rule_id or "", message)
ContractJudge = Callable[
    [dict[str, Any], dict[str, Any], list[dict[str, Any]]], list[tuple[str, str]]
]


@cache
def contract_linters() -> dict[str, Linter]:
    from . import _dr_model, _soo_model, _woc_model

    return {
        "write-observer-chain": _woc_model.lint,
        "shell-output": _soo_model.lint,
        "dispatch-recorder": _dr_model.lint,
    }


@cache
def contract_judges() -> dict[str, tuple[ContractJudge, ContractJudge]]:
    """contract -> (oracle over universal rules, judge of the scenario's own ``then``)."""
    from . import _dr_expect, _dr_oracle, _soo_expect, _soo_oracle, _woc_expect, _woc_oracle

    return {
        "write-observer-chain": (_woc_oracle.check, _woc_expect.check),
        "shell-output": (_soo_oracle.check, _soo_expect.check),
        "dispatch-recorder": (_dr_oracle.check, _dr_expect.check),
    }
