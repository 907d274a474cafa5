"""Starts and stops kvrouter nodes (``bin/kvrouter``, the real launcher) on free loopback ports, for the tests and
the benchmark.

A node is ready when its management ``/ready`` answers 200. Each start builds the router first if it was never
built (``bin/kvrouter`` would, but one build for all nodes of a region is enough). Every process is stopped by
:meth:`RouterProcess.stop` (SIGTERM, then SIGKILL after 30 s), which the fixtures call on every way out; a node
whose test process dies without stopping it gets SIGTERM from the kernel (PR_SET_PDEATHSIG, Linux).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional, Sequence

REPO = Path(os.environ.get("KVROUTER_REPO") or Path(__file__).resolve().parents[3])
LAUNCHER = REPO / "bin" / "kvrouter"
SERVER = REPO / "modules" / "router-server" / "target"

# Small heaps and a serial GC: several JVMs share 2 cores with the tests.
DEFAULT_JAVA_OPTS = "-Xmx512m -XX:+UseSerialGC"


def _die_with_parent() -> None:
    """In the child before exec: Linux sends it SIGTERM if the test process dies without stopping it."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ensure_built(timeout: float = 900) -> None:
    """Builds router-server the way bin/kvrouter does on its first run, once, if it was never built."""
    if (SERVER / "classpath.txt").is_file() and (SERVER / "classes").is_dir():
        return
    subprocess.run(["mvn", "-B", "-q", "-pl", "modules/router-server", "-am", "package", "-DskipTests"],
                   cwd=REPO, check=True, timeout=timeout)


def _http_get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


class RouterProcess:
    """One ``bin/kvrouter`` node on free ports; ``env`` adds KVROUTER_* settings."""

    def __init__(self, name: str, log_dir: Path, env: Optional[Dict[str, str]] = None,
                 remote_port: Optional[int] = None) -> None:
        self.name = name
        self.grpc_port = free_port()
        self.management_port = free_port()
        self.remote_port = remote_port or free_port()
        self.log_path = log_dir / f"{name}.log"
        self.env = dict(env or {})
        self.process: Optional[subprocess.Popen[bytes]] = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def management(self) -> str:
        return f"http://127.0.0.1:{self.management_port}"

    def start(self) -> "RouterProcess":
        env = {k: v for k, v in os.environ.items() if not k.startswith("KVROUTER_")}
        env.update({
            "KVROUTER_GRPC_HOST": "127.0.0.1", "KVROUTER_GRPC_PORT": str(self.grpc_port),
            "KVROUTER_MANAGEMENT_HOST": "127.0.0.1", "KVROUTER_MANAGEMENT_PORT": str(self.management_port),
            "KVROUTER_REMOTE_HOST": "127.0.0.1", "KVROUTER_REMOTE_PORT": str(self.remote_port),
            # the node's HTTP front and endpoint picker on free ports: these tests use its gRPC only, and nodes must
            # not collide
            "KVROUTER_HTTP_PORT": "0", "KVROUTER_EPP_PORT": "0", "KVROUTER_EPP_HEALTH_PORT": "0",
            "KVROUTER_JAVA_OPTS": os.environ.get("KVROUTER_TEST_JAVA_OPTS", DEFAULT_JAVA_OPTS),
        })
        env.update(self.env)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen([str(LAUNCHER)], cwd=REPO, env=env, stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            preexec_fn=_die_with_parent)
        return self

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{self.log_tail()}")
            if _http_get(f"{self.management}/ready")[0] == 200:
                return
            time.sleep(0.1)
        raise TimeoutError(f"{self.name} was not ready within {timeout} s:\n{self.log_tail()}")

    def members_up(self) -> int:
        status, body = _http_get(f"{self.management}/cluster/members")
        if status != 200:
            return 0
        return sum(1 for m in json.loads(body).get("members", []) if m.get("status") == "Up")

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def start_node(name: str, log_dir: Path, env: Optional[Dict[str, str]] = None) -> RouterProcess:
    """A single-node cluster that joins itself, ready; stopped again if it does not get ready."""
    ensure_built()
    node = RouterProcess(name, log_dir, env).start()
    try:
        node.wait_ready()
    except BaseException:
        node.stop()
        raise
    return node


def start_region(log_dir: Path, nodes: int = 3, env: Optional[Dict[str, str]] = None,
                 timeout: float = 180) -> List[RouterProcess]:
    """``nodes`` nodes joined through one seed list with the loopback failure profile (README, "Running several
    nodes"), each ready and seeing all of them Up; every node is stopped again if that fails."""
    ensure_built()
    remote_ports = [free_port() for _ in range(nodes)]
    seeds = ",".join(f"127.0.0.1:{p}" for p in remote_ports)
    common = {"KVROUTER_SEED_NODES": seeds, "KVROUTER_FAILURE_PROFILE": "loopback", **(env or {})}
    started: List[RouterProcess] = []
    try:
        for i, port in enumerate(remote_ports):
            started.append(RouterProcess(f"region-node-{i + 1}", log_dir, common, remote_port=port).start())
        for node in started:
            node.wait_ready(timeout)
        deadline = time.monotonic() + timeout
        while not all(node.members_up() >= nodes for node in started):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the region's {nodes} nodes did not all see each other Up within {timeout} s")
            time.sleep(0.2)
    except BaseException:
        stop_all(started)
        raise
    return started


def stop_all(nodes: Sequence[RouterProcess]) -> None:
    # the highest first: the oldest node (the shard coordinator's) leaves last
    for node in reversed(nodes):
        node.stop()
