"""The import-linter contracts in pyproject.toml hold, and would catch a broken layering.

``nox -s lint`` runs ``lint-imports`` over the installed package. These tests run it over
a copy of the source tree laid out as installed (``seamspec/``, with ``conformance/`` and
``reference/`` inside), so that they can also break the copy on purpose: a contract that
cannot fail proves nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def _installed_layout(tmp_path: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "seamspec", tmp_path / "seamspec", ignore=ignore)
    for folder in ("conformance", "reference"):
        shutil.copytree(REPO / folder, tmp_path / "seamspec" / folder, ignore=ignore)
    return tmp_path


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache", str(REPO / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def test_the_source_tree_keeps_every_contract(tmp_path: Path) -> None:
    result = _lint_imports(_installed_layout(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_core_module_importing_a_contract_room_is_caught(tmp_path: Path) -> None:
    root = _installed_layout(tmp_path)
    _append(
        root / "seamspec/conformance/_core/runner.py",
        "from seamspec.conformance._contracts.shell_output import model as _model  # noqa",
    )
    result = _lint_imports(root)
    assert result.returncode == 1
    assert "conformance layers" in result.stdout
    assert "BROKEN" in result.stdout
    assert "seamspec.conformance._core is not allowed to import" in result.stdout
    assert "seamspec.conformance._contracts.shell_output.model" in result.stdout


def test_an_import_circle_is_caught(tmp_path: Path) -> None:
    root = _installed_layout(tmp_path)
    # errors <- catalogue already; the reverse edge closes a circle inside the core.
    _append(
        root / "seamspec/conformance/_core/errors.py",
        "from seamspec.conformance._core import catalogue as _catalogue  # noqa",
    )
    result = _lint_imports(root)
    assert result.returncode == 1
    assert "no import circles" in result.stdout
    assert "BROKEN" in result.stdout


@pytest.mark.parametrize(
    ("module", "line"),
    [
        (
            "conformance/_contracts/shell_output/model.py",
            "from seamspec.conformance._contracts.dispatch_recorder import model as _dr  # noqa",
        ),
        ("reference/_shell_output/observer.py", "import seamspec.conformance  # noqa"),
    ],
)
def test_rooms_stay_apart(tmp_path: Path, module: str, line: str) -> None:
    root = _installed_layout(tmp_path)
    _append(root / "seamspec" / module, line)
    result = _lint_imports(root)
    assert result.returncode == 1
    assert "BROKEN" in result.stdout
