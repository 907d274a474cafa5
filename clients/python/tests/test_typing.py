"""The installed package is typed (py.typed) and passes mypy with pyproject.toml's [tool.mypy] settings (strict;
grpcio's own modules carry no types; the generated stubs are not checked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import kvrouter

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_the_package_is_marked_typed() -> None:
    assert (Path(kvrouter.__file__).parent / "py.typed").is_file()


def test_mypy_strict_passes_on_the_installed_package(tmp_path: Path) -> None:
    # run outside the source tree, so -p kvrouter is the installed package
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(PYPROJECT), "--cache-dir",
                             str(tmp_path / "cache"), "-p", "kvrouter"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout
