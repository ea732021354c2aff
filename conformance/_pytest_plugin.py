"""pytest plugin: every scenario becomes one pytest item, named by its scenario ID.

Collection is off unless a seamspec option asks for it (``--seamspec``,
``--seamspec-impl``, ``--seamspec-impl-cmd``, ``--seamspec-scenarios`` or
``--seamspec-contract``), so installing seamspec never changes an unrelated test run.
Because scenarios are ordinary items, ``-k``, ``--junitxml`` and pytest-xdist's ``-n``
work unchanged. Items sit under one node per contract (``seamspec::<contract>::<id>``),
so pytest's JUnit XML gives them the class name ``seamspec.<contract>``, exactly as
``seamspec run --junit-xml`` does: a CI that switches between the two keeps its history.
"""

from __future__ import annotations

import shlex
import warnings
from pathlib import Path
from typing import Any

import pytest

from seamspec.conformance._core.adapter import Adapter
from seamspec.conformance._core.catalogue import CONTRACTS
from seamspec.conformance._core.errors import AdapterLoadError, ScenarioError
from seamspec.conformance._core.runner import Runner
from seamspec.conformance._core.scenario import Scenario, load_scenarios
from seamspec.conformance._implementations import load_adapter
from seamspec.conformance._wire.client import WireAdapter

__all__ = ["ContractGroup", "ScenarioItem", "SeamspecSuite"]

_RUNNER_KEY = pytest.StashKey[Runner]()
#: Extra time the Runner allows beyond the wire limit, as ``seamspec run --impl-cmd`` does.
_WIRE_MARGIN = 30.0


class ScenarioFailed(AssertionError):
    """A scenario failed or errored; the message is the kit's own detail."""


class SeamspecShouldWarning(UserWarning):
    """A SHOULD-level finding: reported, but not a conformance failure."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("seamspec", "seamspec conformance scenarios")
    group.addoption(
        "--seamspec", action="store_true", help="collect the seamspec scenarios as tests"
    )
    group.addoption(
        "--seamspec-impl",
        metavar="X",
        help="implementation to judge: reference, reference-trio or module:attribute "
        "(implies --seamspec; default reference)",
    )
    group.addoption(
        "--seamspec-impl-cmd",
        metavar="COMMAND",
        help="judge the implementation this command starts, over the wire protocol "
        '(docs/protocol.md), e.g. "node impl.mjs"; implies --seamspec. With -n, each '
        "xdist worker starts its own copy",
    )
    group.addoption(
        "--seamspec-scenarios",
        action="append",
        type=Path,
        metavar="PATH",
        help="scenario files or folders (default: the suite shipped with seamspec); "
        "implies --seamspec",
    )
    group.addoption(
        "--seamspec-contract",
        action="append",
        choices=CONTRACTS,
        help="only this contract (repeatable); implies --seamspec",
    )
    group.addoption(
        "--seamspec-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="time limit for one scenario",
    )


def _enabled(config: pytest.Config) -> bool:
    return bool(
        config.getoption("seamspec")
        or config.getoption("seamspec_impl")
        or config.getoption("seamspec_impl_cmd") is not None
        or config.getoption("seamspec_scenarios")
        or config.getoption("seamspec_contract")
    )


class SeamspecSuite(pytest.Collector):
    """The whole scenario suite, as one collector under the session."""

    def collect(self) -> list[pytest.Item]:
        config = self.config
        try:
            scenarios = load_scenarios(config.getoption("seamspec_scenarios"))
        except ScenarioError as error:
            raise pytest.UsageError(str(error)) from None
        contracts = config.getoption("seamspec_contract")
        groups: dict[str, ContractGroup] = {}
        items: list[pytest.Item] = []
        for s in scenarios:
            if contracts and s.contract not in contracts:
                continue
            if s.contract not in groups:
                groups[s.contract] = ContractGroup.from_parent(self, name=s.contract)
            items.append(ScenarioItem.from_parent(groups[s.contract], name=s.id, scenario=s))
        return items


class ContractGroup(pytest.Collector):
    """One contract's scenarios: the middle of ``seamspec::<contract>::<id>``.

    Never collected on its own; it exists so that node IDs, and the JUnit class names
    pytest derives from them, name the contract.
    """

    def collect(self) -> list[pytest.Item]:
        return []


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario: Scenario, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        for tag in scenario.tags:
            self.keywords[tag] = True
        self.keywords[scenario.contract] = True

    def runtest(self) -> None:
        runner = _runner(self.config)
        result = runner.run_one(self.scenario)
        self.user_properties.append(("rules", ",".join(self.scenario.rules)))
        if result.status == "skip":
            pytest.skip(result.detail)
        if result.status == "error":
            raise ScenarioFailed(f"implementation error: {result.detail}")
        if result.is_warning:
            warnings.warn(
                SeamspecShouldWarning(f"{self.scenario.id}: {result.detail}"), stacklevel=1
            )
        elif result.status == "fail":
            raise ScenarioFailed(result.detail)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ScenarioFailed):
            s = self.scenario
            return f"{s.id} ({s.level}; rules {', '.join(s.rules)})\n{s.source}\n{excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return Path(self.scenario.source), 0, f"seamspec scenario {self.scenario.id}"


def _runner(config: pytest.Config) -> Runner:
    runner = config.stash.get(_RUNNER_KEY, None)
    if runner is None:
        timeout = config.getoption("seamspec_timeout")
        command = config.getoption("seamspec_impl_cmd")
        if command is not None and config.getoption("seamspec_impl"):
            raise pytest.UsageError("give --seamspec-impl or --seamspec-impl-cmd, not both")
        try:
            if command is not None:
                adapter: Adapter = WireAdapter(shlex.split(command), request_timeout=timeout)
                # The wire limit (which kills and restarts the child) must fire first.
                timeout += _WIRE_MARGIN
            else:
                adapter = load_adapter(config.getoption("seamspec_impl") or "reference")
            runner = Runner(adapter, timeout=timeout)
        except AdapterLoadError as error:
            raise pytest.UsageError(str(error)) from None
        config.stash[_RUNNER_KEY] = runner
    return runner


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Add the suite's items before -k/-m deselection runs, so those filters apply to them."""
    if not _enabled(config):
        return
    suite = SeamspecSuite.from_parent(session, name="seamspec", nodeid="seamspec")
    report = suite.ihook.pytest_make_collect_report(collector=suite)
    if report.failed:
        raise pytest.UsageError(str(report.longrepr))
    _runner(config)  # a bad --seamspec-impl is a usage error before anything runs
    items.extend(x for x in report.result if isinstance(x, pytest.Item))


def pytest_unconfigure(config: pytest.Config) -> None:
    runner = config.stash.get(_RUNNER_KEY, None)
    if runner is not None:
        runner.adapter.close()
