"""``seamspec fuzz``: property-based conformance, judged exactly as ``seamspec run`` judges.

Hypothesis generates valid scenarios (each contract room's ``strategies``), the
implementation performs them (in process or over the wire protocol), and the kit's
:class:`Runner` runs and judges each one under the chosen profile: the oracle and the
derived expectations, the same skips, time limits and statuses as a scenario file. A
failure (or a crash, a hang, a broken protocol message) is shrunk to a minimal scenario
and can be saved as a YAML file that ``seamspec run`` judges the same way, under the
same profile.
"""

from __future__ import annotations

import random
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from seamspec.conformance._core.adapter import Adapter
from seamspec.conformance._core.catalogue import Profile, catalogue
from seamspec.conformance._core.errors import SeamspecError, Unsupported
from seamspec.conformance._core.registry import room as contract_room
from seamspec.conformance._core.registry import rooms
from seamspec.conformance._core.runner import Runner
from seamspec.conformance._core.scenario import Scenario
from seamspec.conformance._quality.fuzz_search import COUNTED, LESSER, Found, search

__all__ = [
    "FuzzFailure",
    "FuzzOutcome",
    "FuzzUnavailable",
    "covers",
    "fuzz",
    "fuzz_contract",
    "reproduce_command",
    "save_failure",
    "scenario_from_document",
    "strategies",
]


class FuzzUnavailable(SeamspecError, ImportError):
    """``seamspec fuzz`` needs hypothesis: ``pip install 'seamspec[fuzz]'``."""


def covers(contract: str) -> list[Any]:
    """The strategies a run of ``contract`` tries once each besides its random examples
    (room ``strategies.covers()``, if the room has one; see :func:`search`)."""
    module = contract_room(contract).optional_module("strategies")
    return list(module.covers()) if module is not None and hasattr(module, "covers") else []


def strategies() -> dict[str, Any]:
    """contract -> its hypothesis strategy of scenario documents (room ``strategies``)."""
    found = {}
    for room in rooms():
        try:
            module = room.optional_module("strategies")
        except ImportError as error:  # hypothesis is an optional extra
            raise FuzzUnavailable(
                f"seamspec fuzz needs hypothesis ({error}); pip install 'seamspec[fuzz]'"
            ) from None
        if module is not None:
            found[room.name] = module.scenarios()
    return found


class _PlainDumper(yaml.SafeDumper):
    """No anchors or aliases: a saved scenario should read like a hand-written one."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


@dataclass
class FuzzFailure:
    """One shrunk generated scenario and what ``run`` makes of it.

    ``kind`` is what the result counts as under the fuzzing profile: ``failure`` or
    ``error`` (``run`` exits 1), ``warning`` or ``recommendation`` (reported only).
    """

    contract: str
    document: dict[str, Any]
    detail: str
    kind: str = "failure"
    #: False when fuzzing stopped before hypothesis had finished shrinking it.
    shrunk: bool = True
    #: Said in the saved file's header: why it is not shrunk, or that it was flaky.
    note: str = ""

    @property
    def counts(self) -> bool:
        """Whether ``seamspec run`` exits 1 on it (under the profile it was found with)."""
        return self.kind in COUNTED

    def yaml_text(self, scenario_id: str, reproduce: str = "") -> str:
        body = {"id": scenario_id, **self.document}
        how = "shrunk by hypothesis" if self.shrunk else "not fully shrunk"
        header = [
            f"# Found by seamspec fuzz ({self.kind}; {how}).",
            f"# {self.detail.splitlines()[0][:200] if self.detail else self.kind}",
        ]
        header += [f"# {line}" for line in self.note.splitlines()]
        if reproduce:
            header.append(f"# Reproduce: {reproduce}")
        return (
            "\n".join(header)
            + "\n"
            + yaml.dump(body, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True, width=100)
        )


@dataclass
class FuzzOutcome:
    """What fuzzing one contract found."""

    contract: str
    seed: int
    #: Examples judged in the main search (not skipped); 0 means nothing was judged.
    judged: int = 0
    #: The shrunk scenario of each kind found, the counted kinds first.
    findings: list[FuzzFailure] = field(default_factory=list)
    #: Why fuzzing stopped early (restarts used up), or "".
    stopped: str = ""

    @property
    def failed(self) -> bool:
        """A failure or an error was found: the verdict ``run`` would give is "does not conform"."""
        return any(f.counts for f in self.findings) or bool(self.stopped)


def scenario_from_document(document: dict[str, Any]) -> Scenario:
    return Scenario(
        id=f"{catalogue().contracts[document['contract']].scenario_prefix}-fuzz",
        title=document["title"],
        contract=document["contract"],
        rules=tuple(document["rules"]),
        level=document["level"],
        tags=tuple(document["tags"]),
        requires=tuple(document.get("requires", ())),
        description=document["description"],
        given=document["given"],
        when=document["when"],
        then=document["then"],
        source="<fuzz>",
        profile=document.get("profile", "upstream"),
    )


def _failures(found: list[Found], contract: str, *, shrunk: bool, note: str) -> list[FuzzFailure]:
    return [
        FuzzFailure(contract, f.document, f.result.detail, f.kind, shrunk=shrunk, note=note)
        for f in found
    ]


def fuzz_contract(
    adapter: Adapter,
    contract: str,
    *,
    examples: int,
    seed: int | None = None,
    profile: Profile = "upstream",
    timeout: float = 60.0,
    on_example: Callable[[int], None] | None = None,
    shrink: bool = True,
) -> FuzzOutcome:
    """Fuzz one contract: up to ``examples`` judged scenarios, then shrink what was found.

    The main search hunts what makes ``run`` exit 1 (failures and errors). Only when it
    finds none, but saw a warning or a strict-profile recommendation, a second search
    with the same seed shrinks those too, so that they never mask a failure. ``timeout``
    is the Runner's limit per scenario (for a wire adapter, keep it above the adapter's
    own request limit, as ``run`` does). ``shrink=False`` stops at the first finding and
    keeps it unshrunk (see :func:`search`).
    """
    strategy = strategies().get(contract)
    if strategy is None:
        raise Unsupported(f"seamspec fuzz has no scenario generator for {contract} yet")
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    runner = Runner(adapter, timeout=timeout, profile=profile)
    extra = covers(contract)
    main = search(
        runner,
        strategy,
        scenario_from_document,
        examples=examples,
        seed=seed,
        hunted=COUNTED,
        on_judged=on_example,
        shrink=shrink,
        covers=extra,
    )
    outcome = FuzzOutcome(contract, seed, main.judged, stopped=main.stopped)
    note = _note(main.stopped, main.flaky, shrink)
    shrunk = shrink and not main.stopped
    outcome.findings = _failures(main.found, contract, shrunk=shrunk, note=note)
    if outcome.findings or outcome.stopped or not main.seen:
        return outcome
    lesser = tuple(kind for kind in LESSER if kind in main.seen)
    again = search(
        runner,
        strategy,
        scenario_from_document,
        examples=examples,
        seed=seed,
        hunted=lesser,
        shrink=shrink,
        covers=extra,
    )
    if again.found:
        note = _note(again.stopped, again.flaky, shrink)
        shrunk = shrink and not again.stopped
        outcome.findings = _failures(again.found, contract, shrunk=shrunk, note=note)
    else:  # not seen again (a timing-dependent result?): the first one, as it was
        first = [main.seen[kind] for kind in lesser]
        outcome.findings = _failures(
            first, contract, shrunk=False, note="seen once, not again when searched for"
        )
    return outcome


def _note(stopped: str, flaky: bool, shrink: bool = True) -> str:
    if stopped:
        return f"{stopped}; this is the smallest failing scenario seen until then"
    if flaky:
        return "flaky: it failed, then passed when hypothesis replayed it (timing-dependent?)"
    if not shrink:
        return "the first failing scenario generated, as it was (shrinking was turned off)"
    return ""


def fuzz(
    adapter: Adapter,
    contract: str,
    *,
    examples: int,
    seed: int | None,
    profile: Profile = "upstream",
    on_example: Callable[[int], None] | None = None,
    shrink: bool = True,
) -> FuzzFailure | None:
    """The most serious (shrunk, unless ``shrink=False``) finding of :func:`fuzz_contract`."""
    outcome = fuzz_contract(
        adapter,
        contract,
        examples=examples,
        seed=seed,
        profile=profile,
        on_example=on_example,
        shrink=shrink,
    )
    return outcome.findings[0] if outcome.findings else None


def save_failure(
    failure: FuzzFailure, folder: Path, reproduce: Callable[[Path], str] | None = None
) -> Path:
    """Write ``failure`` as ``<prefix>-fuzz-found-N.yaml`` (the first free N) in ``folder``.

    ``reproduce(path)`` is the command that judges the file the way fuzz did (the same
    implementation and profile); it goes in the file's header.
    """
    folder.mkdir(parents=True, exist_ok=True)
    prefix = catalogue().contracts[failure.contract].scenario_prefix
    index = 1
    while (folder / f"{prefix}-fuzz-found-{index}.yaml").exists():
        index += 1
    scenario_id = f"{prefix}-fuzz-found-{index}"
    path = folder / f"{scenario_id}.yaml"
    command = reproduce(path) if reproduce else ""
    path.write_text(failure.yaml_text(scenario_id, command), encoding="utf-8")
    return path


def reproduce_command(
    path: Path,
    kind: str,
    *,
    impl: str = "reference",
    impl_cmd: str | None = None,
    request_timeout: float = 60.0,
    profile: Profile = "upstream",
) -> str:
    """The ``seamspec run`` command that judges the saved ``path`` as fuzz judged it.

    The same implementation and profile; for an error over the wire (a hang, maybe) also
    fuzz's time limit, so that reproducing it does not wait for run's default minute.
    """
    words = ["seamspec", "run"]
    if impl_cmd is not None:
        words += ["--impl-cmd", impl_cmd]
        if kind == "error":
            words += ["--request-timeout", f"{request_timeout:g}"]
    elif impl != "reference":
        words += ["--impl", impl]
    if profile != "upstream":
        words += ["--profile", profile]
    words += ["--scenarios", str(path)]
    return shlex.join(words)
