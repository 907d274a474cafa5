"""Fixtures: a kvrouter node for the whole session (``bin/kvrouter`` on free loopback ports), clients of it, and a
fresh model with registered workers per test (models are named uniquely, so tests share the node).

The session node runs with a 2 s late-cancel window (its default, set here because a lost-answer test waits past
it) and a 300 ms deadline margin: the router answers a Book that runs out of time 300 ms before the client's own
deadline, so the tests read the router's reason even on a loaded machine (and a Book with 250 ms left is refused
DEADLINE_TOO_SHORT). Other nodes (a region of three, a node with tokens and TLS) are started by the modules that use them.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path
from typing import AsyncIterator, Callable, Iterator, List, Optional

import pytest

import kvrouter
import routers
from kvrouter.v1 import admin_pb2

SESSION_ENV = {
    "KVROUTER_GRPC_LATE_CANCEL_WINDOW": "2s",
    "KVROUTER_DEADLINE_MARGIN": "300ms",
    # KVROUTER_TEST_GRPC_BINDING=pekko runs the suite against the other binding (tests marked netty_only skip)
    "KVROUTER_GRPC_BINDING": os.environ.get("KVROUTER_TEST_GRPC_BINDING", "netty"),
}

#: for the tests of a cancel the router must see: only the netty binding (the default) sees a client's cancel
#: and writes the PING after a Book's answer (root README, "Errors")
netty_only = pytest.mark.skipif(SESSION_ENV["KVROUTER_GRPC_BINDING"] != "netty",
                                reason="the pekko binding never sees a client's cancel (README, Errors)")
LATE_CANCEL_WINDOW_S = 2.0


@pytest.fixture(scope="session")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("router-logs")


@pytest.fixture(scope="session")
def node(log_dir: Path) -> Iterator[routers.RouterProcess]:
    started = routers.start_node("router", log_dir, SESSION_ENV)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def router(node: routers.RouterProcess) -> Iterator[kvrouter.Router]:
    with kvrouter.Router(node.target, timeout=10.0) as client:
        yield client


@pytest.fixture
async def arouter(node: routers.RouterProcess) -> AsyncIterator[kvrouter.AsyncRouter]:
    async with kvrouter.AsyncRouter(node.target, timeout=10.0) as client:
        yield client


def wait_until(condition: Callable[[], object], timeout: float = 10.0, what: str = "the condition") -> None:
    """Polls ``condition`` until it is true (a condition, not a time: the timeout only bounds the wait)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


async def until(condition: Callable[[], object], timeout: float = 10.0, what: str = "the condition") -> None:
    """As :func:`wait_until`, yielding to the event loop between polls."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)


class Model:
    """A model registered on the node for one test: ``workers`` of ``block_size`` 16 by default."""

    def __init__(self, router: kvrouter.Router, workers: int = 2, block_size: int = 16,
                 total_kv_blocks: int = 1000, max_num_batched_tokens: int = 8192, dp_size: int = 1) -> None:
        self.router = router
        self.name = f"test/{uuid.uuid4().hex[:12]}"
        self.block_size = block_size
        self.workers: List[str] = []
        for i in range(workers):
            worker = f"w{i + 1}"
            router.workers.register(self.name, worker, max_num_batched_tokens=max_num_batched_tokens,
                                    total_kv_blocks=total_kv_blocks, block_size=block_size, dp_size=dp_size,
                                    endpoint=f"http://127.0.0.1:{18000 + i}")
            self.workers.append(worker)

    def state(self) -> admin_pb2.ModelState:
        return self.router.admin.get_model_state(self.name)

    def bookings(self, request_id: Optional[str] = None) -> list:
        """The live bookings (of ``request_id`` only, if given), as GetModelState reports them."""
        return [b for b in self.state().bookings if request_id is None or b.request_id == request_id]

    def remove(self) -> None:
        for worker in self.workers:
            try:
                self.router.workers.deregister(self.name, worker)
            except kvrouter.KvRouterError:
                pass


@pytest.fixture
def model(router: kvrouter.Router) -> Iterator[Model]:
    registered = Model(router)
    try:
        yield registered
    finally:
        registered.remove()


@pytest.fixture
def make_model(router: kvrouter.Router) -> Iterator[Callable[..., Model]]:
    made: List[Model] = []

    def make(**kwargs: int) -> Model:
        made.append(Model(router, **kwargs))
        return made[-1]

    try:
        yield make
    finally:
        for m in made:
            m.remove()
