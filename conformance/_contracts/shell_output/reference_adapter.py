"""The reference shell runner, as the shell-output driver wants it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from seamspec.conformance._contracts.shell_output.driver import ShellOutputDriver
from seamspec.reference import InvocationIds, ShellRunner

__all__ = ["ReferenceShellOutput", "reference_driver"]


class ReferenceShellOutput:
    """Builds a reference :class:`ShellRunner` per scenario, with IDs starting at 1.

    ``runner`` is the runner class to build (the kit's mutants pass broken subclasses).
    """

    features: tuple[str, ...] = ("soo-process", "soo-session", "soo-live-budget")

    def __init__(self, runner: type[ShellRunner] = ShellRunner) -> None:
        self.runner = runner

    def make_shell(
        self,
        *,
        output_cap: int,
        live_budget: int,
        policy: Callable[[Sequence[str]], str | None],
        thread_hook: Callable[[str, int | None], None],
    ) -> ShellRunner:
        return self.runner(
            output_cap=output_cap,
            live_budget=live_budget,
            policy=policy,
            ids=InvocationIds(),
            thread_hook=thread_hook,
        )


def reference_driver() -> ShellOutputDriver:
    return ShellOutputDriver(ReferenceShellOutput())
