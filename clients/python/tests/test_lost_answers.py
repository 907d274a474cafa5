"""A Book whose answer the client never reads: ``replay = true`` exactly when the router did not see the call end.

The client talks to the node through :class:`h2proxy.Http2Proxy` (``owner_direct=False``: an answer naming the
node's own endpoint would otherwise lead its Books around the proxy), which loses the answer where a test wants it:
after the router wrote it, before the client read it. The router saw the cancel (undid the Book; the same
``request_id`` then books anew, ``replay`` false) when the client cancelled while the Book was queued, or reset the
stream after the answer but before acknowledging the router's PING within the late-cancel window. It did not see
it (the booking stays; the same ``request_id`` returns it, ``replay`` true, same attempt) when the connection was
lost with the answer, when the client had acknowledged the PING, or when the reset came after the window. In
every case GetModelState (asked directly) shows at most one live booking for the request id.
"""

from __future__ import annotations

import asyncio
import time
from typing import Iterator

import pytest

import kvrouter
import routers
from conftest import LATE_CANCEL_WINDOW_S, Model, netty_only, until, wait_until
from h2proxy import Http2Proxy, Mode
from kvrouter.v1 import router_pb2


@pytest.fixture
def proxy(node: routers.RouterProcess) -> Iterator[Http2Proxy]:
    p = Http2Proxy(node.grpc_port)
    try:
        yield p
    finally:
        p.close()


@pytest.fixture
def proxied(proxy: Http2Proxy) -> Iterator[kvrouter.Router]:
    with kvrouter.Router(proxy.target, timeout=10.0, owner_direct=False) as client:
        yield client


def lost_answer(proxy: Http2Proxy) -> router_pb2.Booking:
    assert proxy.answer is not None, "the proxy saw no answer"
    return router_pb2.Booking.FromString(proxy.answer)


def test_a_lost_answer_is_replayed_to_the_booking_the_router_made(proxied: kvrouter.Router, proxy: Http2Proxy,
                                                                  model: Model) -> None:
    proxied.select(model.name, isl_tokens=8)  # the connection is up before the proxy is armed
    proxy.arm(Mode.CUT)
    booking = proxied.book(model.name, request_id="cut-sync", isl_tokens=64)
    lost = lost_answer(proxy)
    assert booking.client_replays == 1
    assert (booking.replay, booking.attempt) == (True, lost.attempt)
    assert [b.attempt for b in model.bookings("cut-sync")] == [lost.attempt]
    booking.release()
    assert model.bookings() == []


async def test_a_lost_answer_is_replayed_by_the_async_client(node: routers.RouterProcess, proxy: Http2Proxy,
                                                             model: Model) -> None:
    async with kvrouter.AsyncRouter(proxy.target, timeout=10.0, owner_direct=False) as client:
        await client.select(model.name, isl_tokens=8)
        proxy.arm(Mode.CUT)
        async with client.book(model.name, request_id="cut-async", isl_tokens=64) as booking:
            lost = lost_answer(proxy)
            assert booking.client_replays == 1
            assert (booking.replay, booking.attempt) == (True, lost.attempt)
            assert [b.attempt for b in model.bookings("cut-async")] == [lost.attempt]
    assert model.bookings() == []


def test_a_book_whose_every_answer_is_lost_raises_outcome_unknown(proxied: kvrouter.Router, proxy: Http2Proxy,
                                                                  router: kvrouter.Router, model: Model) -> None:
    proxied.select(model.name, isl_tokens=8)
    proxy.arm(*[Mode.CUT] * 100)
    with pytest.raises(kvrouter.BookingOutcomeUnknown) as raised:
        proxied.book(model.name, request_id="all-lost", isl_tokens=64)
    assert raised.value.request_id == "all-lost"
    assert isinstance(raised.value, kvrouter.Unavailable)
    assert proxy.answers == 5  # the Book and its four replays
    assert len(model.bookings("all-lost")) == 1  # the first Book's booking, replayed by every retry
    assert router.reclaim(model.name, "all-lost") is True
    assert model.bookings() == []


@netty_only
def test_a_replay_that_runs_out_of_time_raises_outcome_unknown(proxied: kvrouter.Router, proxy: Http2Proxy,
                                                               model: Model) -> None:
    proxied.select(model.name, isl_tokens=8)
    proxy.arm(Mode.CUT, Mode.HOLD)  # the answer is lost, the replay's answer never arrives
    with pytest.raises(kvrouter.BookingOutcomeUnknown) as raised:
        proxied.book(model.name, request_id="replay-late", isl_tokens=64, timeout=1.0)
    assert isinstance(raised.value.cause, kvrouter.DeadlineExceeded) and raised.value.cause.retries == 1
    assert proxy.answers == 2
    # the replay's call ended within the late-cancel window: the router freed the booking it had re-bound to it
    wait_until(lambda: not model.bookings("replay-late"), what="the router to free the abandoned replay")


def test_a_lost_release_answer_is_sent_again_and_frees_the_booking(proxied: kvrouter.Router, proxy: Http2Proxy,
                                                                   model: Model) -> None:
    booking = proxied.book(model.name, isl_tokens=64)
    proxy.arm(Mode.CUT)
    booking.release()  # the retry finds it freed by the call whose answer was lost
    assert proxy.answer_seen.is_set() and booking.released
    assert model.bookings() == []


@netty_only
async def test_a_cancel_within_the_window_undoes_the_book(node: routers.RouterProcess, proxy: Http2Proxy,
                                                          router: kvrouter.Router, model: Model) -> None:
    async with kvrouter.AsyncRouter(proxy.target, timeout=10.0, owner_direct=False) as client:
        await client.select(model.name, isl_tokens=8)
        proxy.arm(Mode.HOLD)
        task = asyncio.ensure_future(client.book(model.name, request_id="held-cancel", isl_tokens=64))
        await until(proxy.answer_seen.is_set, what="the router's answer")
        held = lost_answer(proxy)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await until(lambda: not model.bookings("held-cancel"), what="the router to free the cancelled Book")
    anew = router.book(model.name, request_id="held-cancel", isl_tokens=64)
    assert anew.replay is False and anew.attempt != held.attempt
    anew.release()
    assert model.bookings() == []


@netty_only
def test_a_book_whose_deadline_passes_after_the_answer_is_undone(proxied: kvrouter.Router, proxy: Http2Proxy,
                                                                 router: kvrouter.Router, model: Model) -> None:
    proxied.select(model.name, isl_tokens=8)
    proxy.arm(Mode.HOLD)
    with pytest.raises(kvrouter.DeadlineExceeded) as raised:
        proxied.book(model.name, request_id="held-deadline", isl_tokens=64, timeout=0.8)
    assert raised.value.reason is None  # the client's own deadline, not the router's
    held = lost_answer(proxy)
    wait_until(lambda: not model.bookings("held-deadline"), what="the router to free the abandoned Book")
    anew = router.book(model.name, request_id="held-deadline", isl_tokens=64)
    assert anew.replay is False and anew.attempt != held.attempt
    anew.release()


@netty_only
async def test_a_cancel_after_the_ping_was_acknowledged_frees_nothing(node: routers.RouterProcess,
                                                                      proxy: Http2Proxy, router: kvrouter.Router,
                                                                      model: Model) -> None:
    async with kvrouter.AsyncRouter(proxy.target, timeout=10.0, owner_direct=False) as client:
        await client.select(model.name, isl_tokens=8)
        proxy.arm(Mode.HOLD_STREAMS)
        task = asyncio.ensure_future(client.book(model.name, request_id="acked", isl_tokens=64))
        await until(proxy.ping_acked.is_set, what="the client to acknowledge the PING after the answer")
        held = lost_answer(proxy)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await until(lambda: proxy.resets_sent >= 1, what="the client's RST_STREAM to pass the proxy")
    again = router.book(model.name, request_id="acked", isl_tokens=64)
    assert (again.replay, again.attempt) == (True, held.attempt)
    assert len(model.bookings("acked")) == 1
    again.release()
    assert model.bookings() == []


async def test_a_cancel_past_the_late_cancel_window_frees_nothing(node: routers.RouterProcess, proxy: Http2Proxy,
                                                                  router: kvrouter.Router, model: Model) -> None:
    async with kvrouter.AsyncRouter(proxy.target, timeout=10.0, owner_direct=False) as client:
        await client.select(model.name, isl_tokens=8)
        proxy.arm(Mode.HOLD)
        task = asyncio.ensure_future(client.book(model.name, request_id="late", isl_tokens=64))
        await until(proxy.answer_seen.is_set, what="the router's answer")
        seen = time.monotonic()
        held = lost_answer(proxy)
        # what is tested is the router's window itself, a duration: the cancel must come after it
        await until(lambda: time.monotonic() > seen + 1.5 * LATE_CANCEL_WINDOW_S, what="the late-cancel window")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await until(lambda: proxy.resets_sent >= 1, what="the client's RST_STREAM to pass the proxy")
    again = router.book(model.name, request_id="late", isl_tokens=64)
    assert (again.replay, again.attempt) == (True, held.attempt)
    assert len(model.bookings("late")) == 1
    again.release()
    assert model.bookings() == []


async def test_a_book_cancelled_while_queued_books_anew(arouter: kvrouter.AsyncRouter, router: kvrouter.Router,
                                                        make_model) -> None:
    m = make_model(workers=1)
    router.admin.set_policy(m.name, parameters={"queue_threshold_frac": 0.0})
    holder = await arouter.book(m.name, isl_tokens=64)
    waiting = asyncio.ensure_future(arouter.book(m.name, request_id="queued-cancel", isl_tokens=64))
    await until(lambda: m.state().pending == 1, what="the Book to queue")
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await until(lambda: m.state().pending == 0, what="the router to drop the cancelled Book")
    await holder.release()
    anew = await arouter.book(m.name, request_id="queued-cancel", isl_tokens=64)
    assert anew.replay is False
    assert [b.request_id for b in m.bookings()] == ["queued-cancel"]
    await anew.release()


async def test_a_release_cut_off_by_a_second_cancellation_is_finished_in_the_background(
        node: routers.RouterProcess, proxy: Http2Proxy, model: Model) -> None:
    client = kvrouter.AsyncRouter(proxy.target, timeout=10.0, owner_direct=False)
    inside = asyncio.Event()

    async def serve() -> None:
        async with client.book(model.name, request_id="cut-release", isl_tokens=64):
            inside.set()
            await asyncio.Event().wait()

    task = asyncio.ensure_future(serve())
    await inside.wait()
    proxy.blackhole = True  # the release the cancellation starts never reaches the router
    task.cancel()
    await until(lambda: proxy.dropped > 0, what="the release to be sent")
    task.cancel()  # cancelled again while releasing
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(model.bookings("cut-release")) == 1
    proxy.blackhole = False
    proxy.cut_all()  # the release sent again in the background fails over to a new connection
    await client.close()  # waits for it
    assert model.bookings() == []
