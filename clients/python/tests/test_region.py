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


def reports_load(client: kvrouter.Router, model: str, worker: str) -> bool:
    """True once the model's actor took a load report of ``worker`` (after a failover the new incarnation books
    only onto workers that reported since it recovered)."""
    try:
        return client.workers.report_load(model, worker, [{"dp_rank": 0}], timeout=2)
    except kvrouter.KvRouterError:
        return False


def owner_named(clients: List[kvrouter.Router], model: str) -> str:
    """The owner endpoint every node names for ``model``, once they agree."""
    named: List[str] = []

    def agreed() -> bool:
        named[:] = [c.select(model, isl_tokens=16).owner_endpoint for c in clients]
        return bool(named[0]) and len(set(named)) == 1

    wait_until(agreed, timeout=30, what="every node to name the same owner")
    return named[0]


def test_books_sent_to_a_non_owner_go_to_the_owner_after_the_first_answer(
        region: List[routers.RouterProcess], clients: List[kvrouter.Router]) -> None:
    clients[0].workers.register("region/owned", "w1", max_num_batched_tokens=8192, total_kv_blocks=1000,
                                block_size=16)
    wait_until(lambda: all("region/owned" in c.admin.list_models() for c in clients), what="every node to list it")
    owner = owner_named(clients, "region/owned")
    assert owner in [node.target for node in region]
    non_owner = next(node for node in region if node.target != owner)
    with kvrouter.Router(non_owner.target, timeout=10) as client:
        first = client.book("region/owned", isl_tokens=32)
        assert first.booked_via == ""  # sent to the configured node, whose answer names the owner
        assert first.selection.owner_endpoint == owner
        second = client.book("region/owned", isl_tokens=32)
        assert second.booked_via == owner
        assert second.renew() and second.mark_prefill_done()
        assert first.release() and second.release()
    assert live(clients[0], "region/owned") == []
    with kvrouter.Router(non_owner.target, timeout=10, owner_direct=False) as client:
        client.book("region/owned", isl_tokens=32).release()
        assert client.book("region/owned", isl_tokens=32).booked_via == ""


async def test_async_books_go_to_the_owner_after_the_first_answer(region: List[routers.RouterProcess],
                                                                  clients: List[kvrouter.Router]) -> None:
    clients[0].workers.register("region/owned-async", "w1", max_num_batched_tokens=8192, total_kv_blocks=1000,
                                block_size=16)
    wait_until(lambda: all("region/owned-async" in c.admin.list_models() for c in clients),
               what="every node to list it")
    owner = owner_named(clients, "region/owned-async")
    non_owner = next(node for node in region if node.target != owner)
    async with kvrouter.AsyncRouter(non_owner.target, timeout=10) as client:
        async with client.book("region/owned-async", isl_tokens=32) as first:
            assert first.booked_via == ""
        async with client.book("region/owned-async", isl_tokens=32) as second:
            assert second.booked_via == owner
    assert live(clients[0], "region/owned-async") == []


def test_the_owners_death_the_fallback_answers_and_nothing_is_booked_twice(
        region: List[routers.RouterProcess], clients: List[kvrouter.Router]) -> None:
    """Kills the model's owner node (the module's last test: the region is left with two nodes)."""
    clients[0].workers.register("region/orphaned", "w1", max_num_batched_tokens=8192, total_kv_blocks=1000,
                                block_size=16)
    wait_until(lambda: all("region/orphaned" in c.admin.list_models() for c in clients),
               what="every node to list it")
    owner = owner_named(clients, "region/orphaned")
    dead = next(node for node in region if node.target == owner)
    survivor = next(node for node in region if node.target != owner)
    with kvrouter.Router(survivor.target, timeout=60) as client:
        client.book("region/orphaned", isl_tokens=32).release()  # learns the owner
        assert client.book("region/orphaned", request_id="warm", isl_tokens=32).booked_via == owner
        client.release("region/orphaned", "warm", live(client, "region/orphaned")[0][1])
        assert dead.process is not None
        dead.process.kill()
        dead.process.wait(timeout=30)
        # a Book relayed to a dead node is lost until the region removed it (the relay's ask then times out):
        # wait until the model's actor runs again on a survivor and its worker reported, before the client's next
        # Book, which still goes to the dead owner first (no answer since has named another)
        wait_until(lambda: reports_load(client, "region/orphaned", "w1"), timeout=60, what="the actor's failover")
        booking = client.book("region/orphaned", request_id="after-death", isl_tokens=32)
        assert booking.booked_via == ""  # the owner could not be reached: the configured node answered
        assert booking.client_replays == 1  # sent again with retry 1, the same request id
        assert [rid for rid, _ in live(client, "region/orphaned")] == ["after-death"]
        assert booking.release()
        assert live(client, "region/orphaned") == []
