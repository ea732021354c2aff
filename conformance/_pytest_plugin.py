"""pytest plugin: every scenario becomes one pytest item, named by its scenario ID.

Collection is off unless a seamspec option asks for it (``--seamspec``,
``--seamspec-impl``, ``--seamspec-impl-cmd``, ``--seamspec-scenarios``,
``--seamspec-contract`` or ``--seamspec-fuzz``), so installing seamspec never changes an
unrelated test run.
Because scenarios are ordinary items, ``-k``, ``--junitxml`` and pytest-xdist's ``-n``
work unchanged. Items sit under one node per contract (``seamspec::<contract>::<id>``),
so pytest's JUnit XML gives them the class name ``seamspec.<contract>``, exactly as
``seamspec run --junit-xml`` does: a CI that switches between the two keeps its history.
With ``--seamspec-fuzz N`` each contract also gets a ``fuzz`` item
(``seamspec::<contract>::fuzz``) that runs ``seamspec fuzz`` on it with N examples.
"""

from __future__ import annotations

import shlex
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from seamspec.conformance._core.adapter import Adapter
from seamspec.conformance._core.catalogue import CONTRACTS, PROFILES, catalogue
from seamspec.conformance._core.errors import AdapterLoadError, ScenarioError
from seamspec.conformance._core.runner import Runner
from seamspec.conformance._core.scenario import Scenario, load_scenarios
from seamspec.conformance._implementations import load_adapter
from seamspec.conformance._wire.client import WireAdapter

if TYPE_CHECKING:
    from seamspec.conformance._quality.fuzz import FuzzFailure

__all__ = ["ContractGroup", "FuzzItem", "ScenarioItem", "SeamspecSuite"]

_RUNNER_KEY = pytest.StashKey[Runner]()
#: Extra time the Runner allows beyond the wire limit, as ``seamspec run --impl-cmd`` does.
_WIRE_MARGIN = 30.0


class ScenarioFailed(AssertionError):
    """A scenario failed or errored; the message is the kit's own detail."""


class SeamspecShouldWarning(UserWarning):
    """A SHOULD-level finding: reported, but not a conformance failure."""


class SeamspecRecommendation(UserWarning):
    """A missed seamspec decision that the profile does not count (``--seamspec-profile``)."""


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
    group.addoption(
        "--seamspec-profile",
        choices=PROFILES,
        default="upstream",
        help="upstream (default): count what the upstream crates promise; strict: also "
        "count seamspec's own decisions (otherwise reported as warnings), as for run",
    )
    group.addoption(
        "--seamspec-fuzz",
        type=int,
        metavar="N",
        help="also fuzz each contract the implementation declares with N generated "
        "scenarios (seamspec fuzz; needs hypothesis): one item per contract, "
        "seamspec::<contract>::fuzz; implies --seamspec",
    )
    group.addoption(
        "--seamspec-fuzz-seed",
        type=int,
        metavar="S",
        help="hypothesis's seed for --seamspec-fuzz (default: a random one, shown on failure)",
    )
    group.addoption(
        "--seamspec-fuzz-save",
        type=Path,
        metavar="DIR",
        help="with --seamspec-fuzz: write each shrunk finding there as a scenario file",
    )


def _enabled(config: pytest.Config) -> bool:
    return bool(
        config.getoption("seamspec")
        or config.getoption("seamspec_impl")
        or config.getoption("seamspec_impl_cmd") is not None
        or config.getoption("seamspec_scenarios")
        or config.getoption("seamspec_contract")
        or config.getoption("seamspec_fuzz") is not None
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

        def group(contract: str) -> ContractGroup:
            if contract not in groups:
                groups[contract] = ContractGroup.from_parent(self, name=contract)
            return groups[contract]

        for s in scenarios:
            if contracts and s.contract not in contracts:
                continue
            items.append(ScenarioItem.from_parent(group(s.contract), name=s.id, scenario=s))
        if config.getoption("seamspec_fuzz") is not None:
            for contract in _fuzzable(config):
                items.append(FuzzItem.from_parent(group(contract), name="fuzz", contract=contract))
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
        elif result.is_recommendation:
            warnings.warn(
                SeamspecRecommendation(f"{self.scenario.id}: {result.detail}"), stacklevel=1
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


#: As ``seamspec fuzz``: shrinking a crash replays it, and each replay restarts the child.
_FUZZ_RESTARTS = 100


def _fuzzable(config: pytest.Config) -> list[str]:
    """The contracts ``--seamspec-fuzz`` gets an item for: those with a generator."""
    from seamspec.conformance._quality.fuzz import FuzzUnavailable, strategies

    try:
        available = strategies()
    except FuzzUnavailable as error:
        raise pytest.UsageError(str(error)) from None
    chosen = config.getoption("seamspec_contract")
    return [c for c in available if not chosen or c in chosen]


class FuzzItem(pytest.Item):
    """``seamspec fuzz`` on one contract, as one item: passes when nothing counted was found."""

    def __init__(self, *, contract: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.contract = contract
        self.keywords[contract] = True
        self.keywords["fuzz"] = True

    def runtest(self) -> None:
        from seamspec.conformance._quality.fuzz import fuzz_contract

        config = self.config
        info = _runner(config).info
        if self.contract not in info.contracts:
            pytest.skip(f"{info.name} does not declare the {self.contract} contract")
        adapter, timeout = _new_adapter(config, max_restarts=_FUZZ_RESTARTS)
        try:
            outcome = fuzz_contract(
                adapter,
                self.contract,
                examples=config.getoption("seamspec_fuzz"),
                seed=config.getoption("seamspec_fuzz_seed"),
                profile=config.getoption("seamspec_profile"),
                timeout=timeout,
            )
        finally:
            adapter.close()
        if outcome.judged == 0 and not outcome.findings:
            raise ScenarioFailed(
                f"nothing was fuzzed: {info.name} skipped every generated {self.contract} "
                "scenario, or none needs only the features it declares "
                f"({', '.join(info.features) or 'none'})"
            )
        counted = [f"fuzzing stopped early: {outcome.stopped}"] if outcome.stopped else []
        for finding in outcome.findings:
            text = f"{finding.kind} on this generated scenario:\n" + self._shown(finding)
            if finding.counts:
                counted.append(text)
            else:
                category = (
                    SeamspecShouldWarning if finding.kind == "warning" else SeamspecRecommendation
                )
                warnings.warn(category(f"fuzz {self.contract}: {text}"), stacklevel=1)
        if counted:
            counted.append(f"(hypothesis seed {outcome.seed}: --seamspec-fuzz-seed repeats it)")
            raise ScenarioFailed("\n".join(counted))

    def _shown(self, finding: FuzzFailure) -> str:
        """The finding as YAML and, with ``--seamspec-fuzz-save``, where it was saved."""
        from seamspec.conformance._quality.fuzz import reproduce_command, save_failure

        config = self.config
        prefix = catalogue().contracts[self.contract].scenario_prefix
        text = finding.yaml_text(f"{prefix}-fuzz-found") + finding.detail
        folder = config.getoption("seamspec_fuzz_save")
        if folder is None:
            return text

        def reproduce(path: Path) -> str:
            return reproduce_command(
                path,
                finding.kind,
                impl=config.getoption("seamspec_impl") or "reference",
                impl_cmd=config.getoption("seamspec_impl_cmd"),
                request_timeout=config.getoption("seamspec_timeout"),
                profile=config.getoption("seamspec_profile"),
            )

        path = save_failure(finding, folder, reproduce)
        return text + f"\nsaved as {path}; run it with `{reproduce(path)}`"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ScenarioFailed):
            return f"seamspec fuzz {self.contract}\n{excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return Path("<seamspec fuzz>"), 0, f"seamspec fuzz {self.contract}"


def _new_adapter(config: pytest.Config, max_restarts: int = 3) -> tuple[Adapter, float]:
    """The implementation the options name, and the Runner's time limit for it."""
    timeout: float = config.getoption("seamspec_timeout")
    command = config.getoption("seamspec_impl_cmd")
    if command is not None and config.getoption("seamspec_impl"):
        raise pytest.UsageError("give --seamspec-impl or --seamspec-impl-cmd, not both")
    try:
        if command is not None:
            adapter: Adapter = WireAdapter(
                shlex.split(command), request_timeout=timeout, max_restarts=max_restarts
            )
            # The wire limit (which kills and restarts the child) must fire first.
            return adapter, timeout + _WIRE_MARGIN
        return load_adapter(config.getoption("seamspec_impl") or "reference"), timeout
    except AdapterLoadError as error:
        raise pytest.UsageError(str(error)) from None


def _runner(config: pytest.Config) -> Runner:
    runner = config.stash.get(_RUNNER_KEY, None)
    if runner is None:
        adapter, timeout = _new_adapter(config)
        try:
            runner = Runner(adapter, timeout=timeout, profile=config.getoption("seamspec_profile"))
        except AdapterLoadError as error:
            adapter.close()
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
