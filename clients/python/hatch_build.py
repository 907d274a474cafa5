"""Build hook: generates the gRPC stubs of kvrouter's contract with grpcio-tools when a wheel is built.

The contract is ``proto/kvrouter/v1/*.proto``: the repository's ``proto/`` two levels up, or the copy an sdist
carries in its own ``proto/``. The generated modules (``kvrouter/v1/*_pb2.py``, ``*_pb2.pyi``, ``*_pb2_grpc.py``)
are never committed:

* a wheel gets them from a temporary directory (nothing is written into the source tree);
* an editable install writes them into ``src/kvrouter/v1`` (git-ignored), where the editable path points.

After generating, the hook checks that the runtime requirements of the package admit no grpcio older than the
grpcio-tools that generated the stubs and no protobuf older than their gencode: generated code refuses to load
under an older runtime.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from packaging.requirements import Requirement
from packaging.version import Version

GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


class ProtoStubsHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        proto_root = self._proto_root()
        if version == "editable":
            out = Path(self.root) / "src"
            self._generate(proto_root, out)
        else:
            self._temp = Path(tempfile.mkdtemp(prefix="kvrouter-stubs-"))
            self._generate(proto_root, self._temp)
            for path in sorted((self._temp / "kvrouter" / "v1").iterdir()):
                if path.name.endswith(GENERATED_SUFFIXES):
                    build_data["force_include"][str(path)] = f"kvrouter/v1/{path.name}"
        self._check_runtime_pins(out if version == "editable" else self._temp)

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        temp = getattr(self, "_temp", None)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)

    def _proto_root(self) -> Path:
        root = Path(self.root)
        for candidate in (root / "proto", root.parent.parent / "proto"):
            if (candidate / "kvrouter" / "v1" / "router.proto").is_file():
                return candidate
        raise RuntimeError(f"kvrouter's proto/ not found beside {root} (expected proto/kvrouter/v1/router.proto in "
                           "the sdist or two levels up in the repository)")

    def _generate(self, proto_root: Path, out: Path) -> None:
        # imported here: grpcio-tools is a build requirement, not a runtime one
        import grpc_tools
        from grpc_tools import protoc

        sources = sorted(str(p.relative_to(proto_root)) for p in (proto_root / "kvrouter" / "v1").glob("*.proto"))
        target = out / "kvrouter" / "v1"
        target.mkdir(parents=True, exist_ok=True)
        for stale in target.iterdir():
            if stale.name.endswith(GENERATED_SUFFIXES):
                stale.unlink()
        well_known = Path(grpc_tools.__file__).parent / "_proto"
        args = ["grpc_tools.protoc", f"-I{proto_root}", f"-I{well_known}", f"--python_out={out}",
                f"--pyi_out={out}", f"--grpc_python_out={out}", *sources]
        if protoc.main(args) != 0:
            raise RuntimeError(f"grpc_tools.protoc failed: {' '.join(args)}")

    def _check_runtime_pins(self, generated: Path) -> None:
        stubs = generated / "kvrouter" / "v1"
        grpc_match = re.search(r"GRPC_GENERATED_VERSION = '([^']+)'", (stubs / "router_pb2_grpc.py").read_text())
        pb_match = re.search(r"# Protobuf Python Version: (\S+)", (stubs / "router_pb2.py").read_text())
        if grpc_match is None or pb_match is None:
            raise RuntimeError("cannot read the generated grpcio / protobuf versions from the stubs")
        generated_versions = {"grpcio": Version(grpc_match.group(1)), "protobuf": Version(pb_match.group(1))}
        requirements = {Requirement(d).name: Requirement(d) for d in self.metadata.core.dependencies}
        for name, made_by in generated_versions.items():
            req = requirements.get(name)
            lower = None if req is None else max(
                (Version(s.version) for s in req.specifier if s.operator in (">=", "==", "~=")), default=None)
            if lower is None or lower < made_by:
                raise RuntimeError(f"the runtime requirement on {name} ({req}) admits versions older than {made_by}, "
                                   f"which the stubs were generated for: raise its lower bound")
