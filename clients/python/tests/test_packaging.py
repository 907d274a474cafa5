"""The package builds from what git tracks: ``python -m build`` makes an sdist carrying the contract and, from
it, a wheel with the generated stubs; an editable build generates them into ``src/``; no stub is committed; and
the build refuses runtime pins older than the stubs' generator. Built without isolation, from the test
environment's hatchling and grpcio-tools (the versions pyproject.toml pins)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from routers import REPO

STUBS = [f"kvrouter/v1/{name}{suffix}" for name in ("router", "workers", "admin", "common", "explain", "regions")
         for suffix in ("_pb2.py", "_pb2.pyi")] + [f"kvrouter/v1/{s}_pb2_grpc.py" for s in ("router", "workers",
                                                                                         "admin")]


def tracked(*paths: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "--", *paths], cwd=REPO, check=True, capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line]


@pytest.fixture
def clean_copy(tmp_path: Path) -> Path:
    """clients/python and proto/ as a clean clone has them (tracked files only), in the repository's layout."""
    for path in tracked("clients/python", "proto"):
        source = REPO / path
        if source.is_file():
            target = tmp_path / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return tmp_path / "clients" / "python"


def build(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(project / "dist"),
                           *args, str(project)], capture_output=True, text=True, timeout=300)


def test_no_generated_stub_is_committed() -> None:
    assert [p for p in tracked("clients/python") if p.endswith(("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"))] == []


def test_python_m_build_makes_an_sdist_and_from_it_a_wheel_with_the_stubs(clean_copy: Path) -> None:
    result = build(clean_copy)
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = (clean_copy / "dist").glob("kvrouter-*.whl")
    (sdist,) = (clean_copy / "dist").glob("kvrouter-*.tar.gz")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(STUBS) <= names
    assert {"kvrouter/py.typed", "kvrouter/client.py", "kvrouter/aio.py"} <= names
    generated = zipfile.ZipFile(wheel).read("kvrouter/v1/router_pb2_grpc.py").decode()
    assert "class RouterStub" in generated and "GRPC_GENERATED_VERSION = '1.85.1'" in generated
    members = tarfile.open(sdist).getnames()
    assert any(m.endswith("proto/kvrouter/v1/router.proto") for m in members)
    assert not any(m.endswith("_pb2.py") for m in members)
    assert not list((clean_copy / "src" / "kvrouter" / "v1").glob("*_pb2*"))  # nothing written into the source


def test_an_editable_build_generates_the_stubs_into_src(clean_copy: Path) -> None:
    from build import ProjectBuilder

    wheel = ProjectBuilder(clean_copy, python_executable=sys.executable).build("editable", clean_copy / "dist")
    assert Path(wheel).is_file()
    for stub in STUBS:
        assert (clean_copy / "src" / stub).is_file(), stub


def test_a_runtime_pin_older_than_the_stubs_fails_the_build(clean_copy: Path) -> None:
    pyproject = clean_copy / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"grpcio>=1.85.1,<2"', '"grpcio>=1.60,<2"'))
    result = build(clean_copy, "--wheel")
    assert result.returncode != 0
    assert "admits versions older than 1.85.1" in result.stdout + result.stderr
