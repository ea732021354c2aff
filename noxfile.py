"""Sessions for developing seamspec and for gating CI on it.

``nox`` with no arguments runs what CI runs: lint, typecheck, conformance, tests.
"""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "conformance", "tests"]
nox.options.error_on_missing_interpreters = True

PYTHON = "3.11"


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The kit's own tests (reference, loader, oracles, CLI, plugin, mutants)."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


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


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting."""
    session.install("ruff>=0.5")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


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
    session.run("mypy", "tests", "noxfile.py", "docs/examples")
