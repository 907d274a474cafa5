"""A region of three nodes (three ``bin/kvrouter`` processes, one seed list, the loopback failure profile): a
booking made through one node is seen by every node and released through another, sync and asyncio."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, List

import pytest

import kvrouter
import routers
from conftest import until, wait_until


@pytest.fixture(scope="module")
def region(log_dir: Path) -> Iterator[List[routers.RouterProcess]]:
    nodes = routers.start_region(log_dir, 3)
    try:
        yield nodes
    finally:
        routers.stop_all(nodes)


@pytest.fixture(scope="module")
def clients(region: List[routers.RouterProcess]) -> Iterator[List[kvrouter.Router]]:
    opened = [kvrouter.Router(node.target, timeout=10) for node in region]
    try:
        yield opened
    finally:
        for client in opened:
            client.close()


def live(client: kvrouter.Router, model: str) -> list:
    return [(b.request_id, b.attempt) for b in client.admin.get_model_state(model).bookings]


def test_a_booking_made_on_one_node_is_released_through_another(clients: List[kvrouter.Router]) -> None:
    first, second, third = clients
    first.workers.register("region/model", "w1", max_num_batched_tokens=8192, total_kv_blocks=1000,
                           block_size=16, endpoint="http://127.0.0.1:18100")
    first.workers.register("region/model", "w2", max_num_batched_tokens=8192, total_kv_blocks=1000,
                           block_size=16, endpoint="http://127.0.0.1:18101")
    # every node serves the model once its copy of the registrations arrived
    wait_until(lambda: all("region/model" in c.admin.list_models() for c in clients), what="every node to list it")
    booking = first.book("region/model", request_id="cross-node", isl_tokens=64)
    assert booking.region == "default"
    for client in clients:  # GetModelState reads the admission actor, wherever it runs
        assert live(client, "region/model") == [("cross-node", booking.attempt)]
    # the same request id through another node is the same booking
    again = third.book("region/model", request_id="cross-node", isl_tokens=64)
    assert (again.replay, again.attempt) == (True, booking.attempt)
    assert third.renew("region/model", "cross-node", booking.attempt).applied
    assert second.release("region/model", "cross-node", booking.attempt, booking.region) is True
    for client in clients:
        assert live(client, "region/model") == []
    assert first.release("region/model", "cross-node", booking.attempt) is False


async def test_an_async_booking_released_through_another_node(region: List[routers.RouterProcess],
                                                              clients: List[kvrouter.Router]) -> None:
    async with kvrouter.AsyncRouter(region[1].target, timeout=10) as on_second:
        await on_second.workers.register("region/async", "w1", max_num_batched_tokens=8192, total_kv_blocks=1000,
                                         block_size=16)
        await until(lambda: all("region/async" in c.admin.list_models() for c in clients),
                    what="every node to list it")
        booking = await on_second.book("region/async", isl_tokens=32)
        async with kvrouter.AsyncRouter(region[2].target, timeout=10) as on_third:
            assert await on_third.mark_prefill_done("region/async", booking.request_id, booking.attempt)
            assert await on_third.release("region/async", booking.request_id, booking.attempt, booking.region)
        assert live(clients[0], "region/async") == []
