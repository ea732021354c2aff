"""Sessions for developing seamspec and for gating CI on it.

``nox`` with no arguments runs every session CI runs (``.ci/run`` runs the same sessions,
``tests`` in one lane and the others beside it in a second).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import nox

nox.options.sessions = [
    "lint",
    "typecheck",
    "conformance",
    "rust",
    "mutants",
    "fuzz",
    "browser",
    "tests",
]
nox.options.error_on_missing_interpreters = True
# uv builds each session's environment in seconds where pip takes a minute or more, which
# was most of CI's time; plain virtualenv + pip when uv is not installed (.ci/run installs it).
nox.options.default_venv_backend = "uv|virtualenv"

PYTHON = "3.11"


#: Where the tests session's temporary files go when it can: tmpfs, whose fsync returns
#: at once. Many tests write real journals (every record fsync'd) or run the commands of
#: the docs, whose dispatch-recorder scenarios do; on a disk they wait for it.
FAST_TMP = Path("/dev/shm")
#: Free room asked of it: the session keeps well under 100 MiB there at a time; the rest
#: is headroom for a failing run's leftovers and for whatever else shares the memory.
FAST_TMP_ROOM = 2 << 30


def _file_system(folder: Path) -> str | None:
    """The type of the file system ``folder`` is mounted on (Linux), or None."""
    try:
        mounts = Path("/proc/self/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    points = {fields[1]: fields[2] for fields in (line.split() for line in mounts)}
    for place in (folder, *folder.parents):
        if str(place) in points:
            return points[str(place)]
    return None


def _test_temp_folder(session: nox.Session) -> Path | None:
    """A fresh folder on ``FAST_TMP`` for TMPDIR, or None (with a warning saying why)."""
    kind = _file_system(FAST_TMP) if FAST_TMP.is_dir() else None
    if kind != "tmpfs":
        why = f"{FAST_TMP} is not a tmpfs mount" + (f" ({kind})" if kind else "")
    elif not os.access(FAST_TMP, os.W_OK):
        why = f"{FAST_TMP} is not writable"
    elif (free := shutil.disk_usage(FAST_TMP).free) < FAST_TMP_ROOM:
        why = f"{FAST_TMP} has {free >> 20} MiB free, under {FAST_TMP_ROOM >> 20} MiB"
    else:
        return Path(tempfile.mkdtemp(prefix="seamspec-tests-", dir=FAST_TMP))
    session.warn(
        f"tests: temporary files stay in {tempfile.gettempdir()}: {why}; every fsync "
        "of the tests then waits for that disk, and the session takes longer"
    )
    return None


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The kit's own tests (reference, loader, oracles, CLI, plugin, mutants).

    Temporary files go to tmpfs (``FAST_TMP``) when it is there with room, else to the
    default temporary folder, with a line saying so. The tests whose point is what a
    real fsync costs (group commit) keep a folder on the default one, which is passed
    as ``SEAMSPEC_DISK_TMPDIR`` (the ``disk_path`` fixture, tests/conftest.py).
    """
    session.install("-e", ".[test]")
    env = {"SEAMSPEC_DISK_TMPDIR": tempfile.gettempdir()}
    fast = _test_temp_folder(session)
    if fast is not None:
        env["TMPDIR"] = str(fast)
        session.log(
            f"tests: TMPDIR={fast} (tmpfs); disk-bound tests in {env['SEAMSPEC_DISK_TMPDIR']}"
        )
    try:
        # The browser tests are the browser session's; the slowest tests are listed so
        # that a CI log shows where the time goes.
        session.run(
            "pytest", "-n", "2", "-m", "not browser", "--durations=25", *session.posargs,
            env=env,
        )  # fmt: skip
    finally:
        if fast is not None:
            shutil.rmtree(fast, ignore_errors=True)


@nox.session(python=PYTHON)
def conformance(session: nox.Session) -> None:
    """The whole suite against every shipped implementation, writing every report."""
    session.install(".[trio]")
    for impl in ("reference", "reference-trio"):
        session.run(
            "seamspec",
            "run",
            "--impl",
            impl,
            "-q",
            "--report-json",
            f"reports/{impl}.json",
            "--junit-xml",
            f"reports/{impl}.xml",
            *session.posargs,
        )
    # The JavaScript example, over the wire protocol (docs/protocol.md).
    if shutil.which("node") is None:
        session.warn(
            "node is not installed: SKIPPED the JavaScript implementation (examples/js); "
            "reports/js.json was not written"
        )
    else:
        session.run(
            "seamspec",
            "run",
            "--impl-cmd",
            "node examples/js/seamspec-impl.mjs",
            # Four copies of the example side by side (each worker starts its own): the
            # scenarios mostly wait, and the example keeps nothing between them.
            "-j",
            "4",
            "--strict-protocol",
            "--expect",
            "examples/js/known-failures.yaml",
            "-q",
            "--report-json",
            "reports/js.json",
            "--junit-xml",
            "reports/js.xml",
            *session.posargs,
        )
    # Only this session's reports: a stale file from an earlier run must not sneak in.
    written = [f"reports/{impl}.json" for impl in ("reference", "reference-trio")]
    written += ["reports/js.json"] if shutil.which("node") else []
    if not session.posargs:
        # Every scenario a pass, in the suite's order (the verdict allows skips).
        # Run as a script: from the repository root, ``-m`` would import the source folder
        # ``seamspec`` instead of the installed package (which maps its subpackages).
        session.run("python", "tests/reference_report.py", *written[:2])
    # Every other format is derived from the JSON reports written above.
    session.run("seamspec", "report", "html", *written, "-o", "reports/index.html")
    session.run("seamspec", "report", "markdown", *written, "-o", "reports/summary.md")
    for path in written:
        session.run(
            "seamspec", "report", "badge", path, "-o", f"reports/{Path(path).stem}.badge.json"
        )


RUST_EXAMPLE = "examples/rust"
RUST_IMPL = f"{RUST_EXAMPLE}/target/release/seamspec-rust-impl"


@nox.session(python=PYTHON)
def rust(session: nox.Session) -> None:
    """The Rust example (examples/rust), built offline and judged over the wire protocol.

    Default profile: it must conform (every shell-output scenario passes or is skipped
    for the one feature it does not declare). Strict profile: its differences must be
    exactly those its manifest lists (``--expect ... --strict`` fails on any other
    failure and on a listed scenario that passes).
    """
    if shutil.which("cargo") is None:
        session.skip("cargo is not installed: SKIPPED the Rust example (examples/rust)")
    manifest = ["--manifest-path", f"{RUST_EXAMPLE}/Cargo.toml"]
    session.run("cargo", "build", "--offline", "--release", *manifest, external=True)
    session.run("cargo", "test", "--offline", "--release", "-q", *manifest, external=True)
    session.install(".")
    # Four copies side by side (each worker starts its own): the shell-output scenarios
    # mostly wait on their gates and child programs, so one copy took 20 s of which 6 s CPU.
    common = ["--impl-cmd", RUST_IMPL, "--contract", "shell-output", "--strict-protocol", "-q"]
    common += ["-j", "4"]
    session.run(
        "seamspec", "run", *common, "--report-json", "reports/rust.json",
        "--junit-xml", "reports/rust.xml",
    )  # fmt: skip
    session.run(
        "seamspec", "run", *common, "--profile", "strict",
        "--expect", f"{RUST_EXAMPLE}/known-failures.yaml", "--strict",
        "--report-json", "reports/rust-strict.json",
    )  # fmt: skip
    session.run("python", "-m", "tests.rust_report", "reports/rust.json")


@nox.session(python=PYTHON)
def mutants(session: nox.Session) -> None:
    """Proof that the suite catches bugs: every mutant killed, every MUST rule covered."""
    session.install(".[trio,mutation]")
    session.run("seamspec", "rules", "--coverage")
    session.run("seamspec", "mutants", "--report-json", "reports/kill-matrix.json")
    # A fixed sample of the cosmic-ray run (nox -s mutation), so that a change that lets a
    # mutant survive, or makes an equivalents entry stale, fails CI too: 8 seeded
    # mutants of the executor, judged by the dispatch-recorder scenarios (about 30 s:
    # 15 s of CPU).
    session.run(
        "python", "mutation/run.py", "--module", "_dispatch_recorder/executor.py",
        "--sample", "8", "--seed", "20261201", "--jobs", "1",
    )  # fmt: skip


@nox.session(python=PYTHON)
def mutation(session: nox.Session) -> None:
    """cosmic-ray over the reference modules that decide the rules, judged by the suite.

    Not a default session: it runs the contract's scenarios once per mutant (about an
    hour on 2 cores). Prints the per-module table; ``nox -s mutation -- --update-doc
    docs/quality.md`` also rewrites the table in the docs. CI runs a fixed sample of it in
    the ``mutants`` session. See mutation/run.py and docs/quality.md.
    """
    session.install(".[trio,mutation]")
    session.run("python", "mutation/run.py", "--jobs", "2", *session.posargs)


@nox.session(python=PYTHON)
def fuzz(session: nox.Session) -> None:
    """Generated scenarios against the reference in process, then against the JavaScript
    and Rust examples over the wire protocol (as a harness author fuzzes theirs), bounded
    and seeded so CI is repeatable and short.

    Pass ``-- --examples 10000`` (and no seed) for the long documented runs.
    """
    session.install(".[trio,fuzz]")
    args = session.posargs or ["--examples", "100", "--seed", "20261130"]
    session.run("seamspec", "fuzz", *args)
    wire = session.posargs or ["--examples", "50", "--seed", "20261130"]
    if shutil.which("node") is None:
        session.warn("node is not installed: SKIPPED fuzzing the JavaScript example (examples/js)")
    else:
        js = ["--impl-cmd", "node examples/js/seamspec-impl.mjs", "--strict-protocol"]
        session.run("seamspec", "fuzz", *js, *wire)
    if shutil.which("cargo") is None:
        session.warn("cargo is not installed: SKIPPED fuzzing the Rust example (examples/rust)")
        return
    manifest = ["--manifest-path", f"{RUST_EXAMPLE}/Cargo.toml"]
    session.run("cargo", "build", "--offline", "--release", "-q", *manifest, external=True)
    rust = ["--impl-cmd", RUST_IMPL, "--contract", "shell-output", "--strict-protocol"]
    session.run("seamspec", "fuzz", *rust, *wire)


@nox.session(python=PYTHON)
def browser(session: nox.Session) -> None:
    """The HTML report rendered in a real headless Chromium (Debian's chromium package).

    Installs chromium with apt-get when it is missing (CI runs as root); the test then
    fails rather than skips if the browser is still not there.
    """
    if shutil.which("chromium") is None:
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            session.error(
                "chromium is not installed and cannot be installed here: apt-get install chromium"
            )
        session.run("apt-get", "update", "-qq", external=True)
        session.run(
            "apt-get",
            "install",
            "-y",
            "-qq",
            "--no-install-recommends",
            "chromium",
            external=True,
            env={"DEBIAN_FRONTEND": "noninteractive"},
        )
    session.install("-e", ".[test]")
    session.run(
        "pytest",
        "-m",
        "browser",
        "-p",
        "no:cacheprovider",
        "tests/test_html_browser.py",
        env={"SEAMSPEC_REQUIRE_BROWSER": "1"},
    )


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff (lint and formatting) and import-linter (the layering of docs/architecture.md).

    import-linter reads the installed package, like the typecheck session, because the
    source folders only become ``seamspec.conformance`` and ``seamspec.reference`` once
    installed.
    """
    session.install(".[lint]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    config = str(Path("pyproject.toml").resolve())
    with session.chdir(session.create_tmp()):
        session.run("lint-imports", "--no-cache", config)


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the installed package, then the tests, examples and this file.

    The package is checked as installed (not from the source folders) because its
    ``seamspec.reference`` and ``seamspec.conformance`` live in top-level folders mapped
    by setuptools, which mypy cannot follow from the source tree.
    """
    session.install(".[typecheck]", "nox")
    with session.chdir(session.create_tmp()):
        session.run("mypy", "-p", "seamspec")
    session.run("mypy", "tests", "noxfile.py", "docs/examples", "benchmarks", "mutation")


@nox.session(python=PYTHON)
def power_loss(session: nox.Session) -> None:
    """The journal's power-loss simulation, 10,000 trials (docs/reliability.md, "Journal").

    Outside the default run: it takes a couple of minutes. Extra arguments go to the
    simulation (``nox -s power_loss -- --trials 500 --seed 7``).
    """
    session.install(".")
    session.run(
        "python", "tests/journal_power_loss.py", *(session.posargs or ["--trials", "10000"])
    )


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks (not part of the default sessions): every figure of docs/benchmarks.md.

    Each figure is a ratio against its limit measured in the same run, per round, in
    short alternating blocks, with its spread. Each script writes what it prints to
    benchmarks/results/<script>.txt, which docs/benchmarks.md quotes (tests/
    test_benchmarks.py checks the quotes). ``nox -s bench -- suite_bench`` runs one
    script; ``-- --quick`` a tiny run of each, which writes no file. Reports nothing as
    a failure but a flaky suite (flake_check): these are measurements.
    """
    session.install(".[trio]")
    names = [a for a in session.posargs if not a.startswith("-")] or [
        "suite_bench",
        "flake_check",
        "wire_bench",
        "soo_bench",
        "dr_bench",
    ]
    options = [a for a in session.posargs if a.startswith("-")]
    for name in names:
        session.run("python", f"benchmarks/{name}.py", *options)
