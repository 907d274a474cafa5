"""The asyncio client against a live node: every Router call, and the booking context manager's release on normal
exit, exception and task cancellation (GetModelState shows no live booking after each)."""

from __future__ import annotations

import asyncio
import time

import pytest

import kvrouter
from conftest import Model, until
from kvrouter import Scope


async def test_health_and_select(arouter: kvrouter.AsyncRouter, model: Model) -> None:
    assert await arouter.health() == kvrouter.SERVING
    selection = await arouter.select(model.name, token_ids=list(range(40)), explain=True)
    assert selection.worker_id in model.workers
    assert selection.explanation is not None and selection.explanation.kind == "select"
    assert (await arouter.select(model.name, isl_tokens=8, scope=Scope.GLOBAL)).region == "default"
    assert model.bookings() == []


async def test_async_with_book_releases_on_normal_exit(arouter: kvrouter.AsyncRouter, model: Model) -> None:
    async with arouter.book(model.name, token_ids=list(range(64))) as booking:
        assert isinstance(booking, kvrouter.AsyncBooking)
        assert [b.attempt for b in model.bookings(booking.request_id)] == [booking.attempt]
        assert await booking.mark_prefill_done() is True
        before = booking.lease_expires_unix_ms
        booked_at = model.bookings()[0].booked_unix_ms
        await until(lambda: time.time() * 1000 > booked_at + 2, what="the clock to pass the booking's millisecond")
        assert await booking.renew() is True and booking.lease_expires_unix_ms > before
    assert booking.released
    assert model.bookings() == []


async def test_async_with_book_releases_on_exception(arouter: kvrouter.AsyncRouter, model: Model) -> None:
    with pytest.raises(ValueError, match="bad stream"):
        async with arouter.book(model.name, isl_tokens=64) as booking:
            assert len(model.bookings()) == 1
            raise ValueError("bad stream")
    assert booking.released
    assert model.bookings() == []


async def test_async_with_book_releases_when_the_task_is_cancelled(arouter: kvrouter.AsyncRouter,
                                                                    model: Model) -> None:
    inside = asyncio.Event()

    async def serve() -> None:
        async with arouter.book(model.name, isl_tokens=64):
            inside.set()
            await asyncio.Event().wait()  # a stream that never ends

    task = asyncio.ensure_future(serve())
    await inside.wait()
    assert len(model.bookings()) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert model.bookings() == []


async def test_cancelling_a_queued_book_leaves_nothing(arouter: kvrouter.AsyncRouter, router: kvrouter.Router,
                                                        make_model) -> None:
    m = make_model(workers=1)
    # queue when every rank holds any prefill tokens: the first booking makes the second Book wait
    router.admin.set_policy(m.name, parameters={"queue_threshold_frac": 0.0})
    holder = await arouter.book(m.name, isl_tokens=64)
    waiting = asyncio.ensure_future(arouter.book(m.name, request_id="queued", isl_tokens=64))
    await until(lambda: m.state().pending == 1, what="the second Book to queue")
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await until(lambda: m.state().pending == 0, what="the router to drop the cancelled Book")
    assert [b.request_id for b in m.bookings()] == [holder.request_id]
    await holder.release()


async def test_a_queued_book_is_admitted_when_prefill_is_done(arouter: kvrouter.AsyncRouter, router: kvrouter.Router,
                                                               make_model) -> None:
    m = make_model(workers=1)
    router.admin.set_policy(m.name, parameters={"queue_threshold_frac": 0.0})
    async with arouter.book(m.name, isl_tokens=64) as first:
        second = asyncio.ensure_future(arouter.book(m.name, request_id="second", isl_tokens=64))
        await until(lambda: m.state().pending == 1, what="the second Book to queue")
        assert await first.mark_prefill_done() is True
        booked = await asyncio.wait_for(second, 10)
        assert booked.queued_micros > 0
        await booked.release()
    assert m.bookings() == []


async def test_keep_alive_task_renews_until_release(arouter: kvrouter.AsyncRouter, model: Model) -> None:
    booking = await arouter.book(model.name, isl_tokens=64)
    keeper = booking.keep_alive(interval=0.05)
    await until(lambda: keeper.renewals >= 3, what="three background renewals")
    assert await booking.release() is True
    assert keeper.stopped and not booking.lost
    assert model.bookings() == []


async def test_release_mark_renew_by_reference(arouter: kvrouter.AsyncRouter, model: Model) -> None:
    booking = await arouter.book(model.name, request_id="by-ref", isl_tokens=64)
    again = await arouter.book(model.name, request_id="by-ref", isl_tokens=64)
    assert again.replay and again.attempt == booking.attempt
    assert await arouter.mark_prefill_done(model.name, "by-ref", booking.attempt) is True
    assert (await arouter.renew(model.name, "by-ref", booking.attempt)).applied is True
    assert await arouter.release(model.name, "by-ref", booking.attempt) is True
    assert (await arouter.renew(model.name, "by-ref", booking.attempt)).applied is False
    assert await arouter.reclaim(model.name, "by-ref") is False  # nothing was held: booked anew and freed
    assert model.bookings() == []
