"""The conformance kit: scenarios, adapters, oracles, the runner and reports.

Everything public is re-exported here; the ``_``-prefixed modules are private and may
change without notice.
"""

from __future__ import annotations

from seamspec.conformance._contracts.dispatch_recorder.driver import (
    DispatchRecorderDriver,
    DispatchRecorderImplementation,
)
from seamspec.conformance._contracts.shell_output.driver import (
    ShellOutputDriver,
    ShellOutputImplementation,
)
from seamspec.conformance._contracts.write_observer_chain.driver import (
    ScriptedObserver,
    TracedObserver,
    WriteObserverChainDriver,
    WriteObserverImplementation,
)
from seamspec.conformance._core.adapter import Adapter, ImplementationInfo, Trace
from seamspec.conformance._core.catalogue import (
    CONTRACTS,
    SPEC_VERSION,
    Catalogue,
    Contract,
    Rule,
    catalogue,
    rules_markdown,
)
from seamspec.conformance._core.errors import (
    AdapterLoadError,
    CatalogueError,
    ImplementationError,
    Problem,
    ScenarioError,
    SeamspecError,
    Unsupported,
)
from seamspec.conformance._core.python_adapter import ContractDriver, PythonAdapter
from seamspec.conformance._core.runner import (
    Finding,
    Runner,
    RunResult,
    ScenarioResult,
    Status,
    judge,
    summary_line,
)
from seamspec.conformance._core.scenario import (
    Scenario,
    default_scenario_root,
    load_scenarios,
    validate_files,
)
from seamspec.conformance._core.tracer import Tracer
from seamspec.conformance._implementations import load_adapter
from seamspec.conformance._quality.coverage import rule_coverage
from seamspec.conformance._reports.json_junit import (
    REPORT_VERSION,
    to_json_report,
    write_json_report,
    write_junit_xml,
)

__all__ = [
    "CONTRACTS",
    "REPORT_VERSION",
    "SPEC_VERSION",
    "Adapter",
    "AdapterLoadError",
    "Catalogue",
    "CatalogueError",
    "Contract",
    "ContractDriver",
    "DispatchRecorderDriver",
    "DispatchRecorderImplementation",
    "Finding",
    "ImplementationError",
    "ImplementationInfo",
    "Problem",
    "PythonAdapter",
    "Rule",
    "RunResult",
    "Runner",
    "Scenario",
    "ScenarioError",
    "ScenarioResult",
    "ScriptedObserver",
    "SeamspecError",
    "ShellOutputDriver",
    "ShellOutputImplementation",
    "Status",
    "Trace",
    "TracedObserver",
    "Tracer",
    "Unsupported",
    "WriteObserverChainDriver",
    "WriteObserverImplementation",
    "catalogue",
    "default_scenario_root",
    "judge",
    "load_adapter",
    "load_scenarios",
    "rule_coverage",
    "rules_markdown",
    "summary_line",
    "to_json_report",
    "validate_files",
    "write_json_report",
    "write_junit_xml",
]
