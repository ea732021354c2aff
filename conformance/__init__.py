"""The conformance kit: scenarios, adapters, oracles, the runner and reports.

Everything public is re-exported here; the ``_``-prefixed modules are private and may
change without notice.
"""

from __future__ import annotations

from ._adapter import Adapter, ImplementationInfo, Trace, load_adapter
from ._catalogue import (
    CONTRACTS,
    SPEC_VERSION,
    Catalogue,
    Contract,
    Rule,
    catalogue,
    rules_markdown,
)
from ._coverage import rule_coverage
from ._dr_driver import DispatchRecorderDriver, DispatchRecorderImplementation
from ._errors import (
    AdapterLoadError,
    CatalogueError,
    ImplementationError,
    Problem,
    ScenarioError,
    SeamspecError,
    Unsupported,
)
from ._python_adapter import ContractDriver, PythonAdapter
from ._report import REPORT_VERSION, to_json_report, write_json_report, write_junit_xml
from ._runner import Finding, Runner, RunResult, ScenarioResult, Status, judge, summary_line
from ._scenario import Scenario, default_scenario_root, load_scenarios, validate_files
from ._soo_driver import ShellOutputDriver, ShellOutputImplementation
from ._tracer import Tracer
from ._woc_driver import (
    ScriptedObserver,
    TracedObserver,
    WriteObserverChainDriver,
    WriteObserverImplementation,
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
