"""The reference shell runner and observation session, with real child processes.

The conformance scenarios judge behaviour through the kit; these tests pin down the
runner's own API and its resource hygiene (threads, children, descriptors), which no
scenario can see.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest

from seamspec.reference import (
    CommandFailed,
    CommandRefused,
    InvocationIds,
    ObservationSession,
    SessionPhase,
    ShellOutputStream,
    ShellRunner,
    as_shell_observer,
)
from seamspec.reference._shell_output.observer import PROCESS_IDS

BACKENDS = ["asyncio", "trio"]
OUT, ERR = ShellOutputStream.STDOUT, ShellOutputStream.STDERR


class Recorder:
    """An observer that keeps everything it is given, with the thread it ran on."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[tuple[str, int, str, bytes, str]] = []
        self.finished = threading.Event()

    def on_output(self, invocation: int, stream: ShellOutputStream, chunk: bytes) -> None:
        with self.lock:
            self.calls.append(
                ("out", invocation, stream.value, chunk, threading.current_thread().name)
            )

    def on_finish(self, invocation: int) -> None:
        with self.lock:
            self.calls.append(("finish", invocation, "", b"", threading.current_thread().name))
        self.finished.set()

    def text(self, stream: str) -> bytes:
        return b"".join(c[3] for c in self.calls if c[0] == "out" and c[2] == stream)


def sh(script: str) -> list[str]:
    return ["/bin/sh", "-c", script]


@pytest.mark.parametrize("backend", BACKENDS)
def test_result_is_the_same_with_and_without_an_observer(backend: str) -> None:
    async def main() -> None:
        runner = ShellRunner(output_cap=5, ids=InvocationIds())
        command = sh("printf 'hello world'; printf 'e' >&2; exit 7")
        plain = await runner.run(command)
        seen = Recorder()
        watched = await runner.run(command, observer=seen)
        assert plain == watched
        assert (plain.exit_code, plain.stdout, plain.stderr) == (7, b"hello", b"e")
        assert plain.stdout_truncated
        assert not plain.stderr_truncated
        assert not plain.timed_out
        assert runner.wait_idle(5)
        assert seen.text("stdout") == b"hello"
        assert seen.text("stderr") == b"e"
        assert seen.calls[-1][0] == "finish"

    anyio.run(main, backend=backend)


def test_session_cuts_the_crossing_chunk_per_stream() -> None:
    seen = Recorder()
    session = ObservationSession(1, seen, budget=3)
    for stream, chunk in [(OUT, b"ab"), (OUT, b"cd"), (ERR, b"wxyz"), (OUT, b"e"), (OUT, b"")]:
        session.offer(stream, chunk)
    session.finish()
    session.offer(OUT, b"late")
    assert session.join(5)
    assert seen.text("stdout") == b"abc"
    assert seen.text("stderr") == b"wxy"
    assert [c[0] for c in seen.calls][-1] == "finish"
    assert session.phase is SessionPhase.FINISHED
    assert all(c[3] for c in seen.calls if c[0] == "out")


def test_cancel_returns_while_a_callback_is_blocked() -> None:
    gate, entered = threading.Event(), threading.Event()
    calls: list[bytes] = []

    def blocked(invocation: int, stream: ShellOutputStream, chunk: bytes) -> None:
        calls.append(chunk)
        entered.set()
        gate.wait()

    session = ObservationSession(1, as_shell_observer(blocked), budget=100)
    session.offer("stdout", b"one")
    assert entered.wait(5)
    session.offer("stdout", b"two")
    t0 = time.monotonic()
    session.cancel()
    assert time.monotonic() - t0 < 0.5
    gate.set()
    assert session.join(5)
    assert calls == [b"one"]
    assert session.phase is SessionPhase.CANCELLED


def test_a_plain_callable_is_an_observer_without_finish() -> None:
    got: list[bytes] = []
    observer = as_shell_observer(lambda i, s, c: got.append(c))
    session = ObservationSession(1, observer, budget=10)
    session.offer(OUT, b"x")
    session.finish()
    assert session.join(5)
    assert got == [b"x"]
    with pytest.raises(TypeError):
        as_shell_observer(42)  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", BACKENDS)
def test_refused_and_unobserved_commands_take_no_id(backend: str) -> None:
    async def main() -> None:
        runner = ShellRunner(policy=lambda argv: "no" if "forbidden" in argv[-1] else None)
        before = PROCESS_IDS.peek()
        with pytest.raises(CommandRefused):
            await runner.run(sh("echo forbidden"), observer=Recorder())
        await runner.run(sh("true"))
        assert PROCESS_IDS.peek() == before
        ids: list[int] = []
        await runner.run(sh("true"), observer=Recorder(), on_invocation=ids.append)
        assert ids == [before]
        assert PROCESS_IDS.peek() == before + 1
        with pytest.raises(CommandFailed):
            await runner.run(["/nonexistent/program"], observer=Recorder())
        assert runner.wait_idle(5)

    anyio.run(main, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_time_limit_kills_the_whole_process_group(backend: str, tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"

    async def main() -> None:
        runner = ShellRunner()
        result = await runner.run(
            sh(f"sleep 30 & echo $! > {marker}; echo started; wait"), timeout=1.0
        )
        assert result.timed_out
        assert result.exit_code is None
        assert result.stdout == b"started\n"

    anyio.run(main, backend=backend)
    grandchild = int(marker.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(grandchild), "the grandchild outlived the time limit"


def test_emitter_runs_as_a_module() -> None:
    script = '{"steps": [{"out": "a"}, {"err_hex": "ff"}, {"flood": "stdout", "bytes": 70}, {"exit": 5}]}'
    done = subprocess.run(
        [sys.executable, "-m", "seamspec.reference._shell_output.emitter", script],
        capture_output=True,
        check=False,
    )
    from seamspec.reference._shell_output.emitter import flood_bytes

    assert done.returncode == 5
    assert done.stdout == b"a" + flood_bytes(70)
    assert done.stderr == b"\xff"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _children() -> int:
    me, count = str(os.getpid()), 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()[1] == me:
                    count += 1
            except OSError:
                continue
    return count


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_thousand_invocations_leak_nothing(backend: str) -> None:
    """Normal, cancelled, timed-out, refused, failing and panicking: all cleaned up."""
    threads, children, fds = threading.active_count(), _children(), _fds()

    def panicking(invocation: int, stream: ShellOutputStream, chunk: bytes) -> None:
        raise RuntimeError("observer bug")

    def failing_finish() -> Recorder:
        recorder = Recorder()

        def on_finish(invocation: int) -> None:
            raise RuntimeError("finish bug")

        recorder.on_finish = on_finish  # type: ignore[method-assign]
        return recorder

    runner = ShellRunner(policy=lambda argv: "refused" if argv[-1] == "refuse" else None)
    outcomes: dict[str, int] = {}

    async def one(index: int) -> None:
        kind = ("normal", "cancel", "timeout", "refused", "panic", "finish-panic", "missing")[
            index % 7
        ]
        observer = (
            panicking
            if kind == "panic"
            else failing_finish()
            if kind == "finish-panic"
            else Recorder()
        )
        command = sh("printf x; printf y >&2")
        try:
            if kind == "cancel":
                with anyio.move_on_after(0.05):
                    await runner.run(sh("printf x; sleep 30"), observer=observer)
            elif kind == "timeout":
                await runner.run(sh("printf x; sleep 30"), observer=observer, timeout=0.05)
            elif kind == "refused":
                await runner.run(sh("refuse"), observer=observer)
            elif kind == "missing":
                await runner.run(["/nonexistent/program"], observer=observer)
            else:
                result = await runner.run(command, observer=observer)
                assert result.stdout == b"x"
                assert result.stderr == b"y"
        except (CommandRefused, CommandFailed):
            pass
        outcomes[kind] = outcomes.get(kind, 0) + 1

    async def main() -> None:
        limiter = anyio.CapacityLimiter(40)

        async def limited(index: int) -> None:
            async with limiter:
                await one(index)

        async with anyio.create_task_group() as group:
            for index in range(1000):
                group.start_soon(limited, index)

    anyio.run(main, backend=backend)
    assert sum(outcomes.values()) == 1000
    assert len(outcomes) == 7
    assert runner.wait_idle(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (
        threading.active_count() > threads or _children() > children or _fds() > fds
    ):
        time.sleep(0.02)
    # Threads left over from earlier tests may end meanwhile, hence "at most".
    assert threading.active_count() <= threads, "threads leaked"
    assert _children() <= children, "child processes leaked"
    assert _fds() <= fds, "file descriptors leaked"


def test_emitter_has_a_console_script() -> None:
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "seamspec-emitter"]
    assert script.value == "seamspec.reference._shell_output.emitter:main"
