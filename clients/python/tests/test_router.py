"""The sync client's Router calls against a live node: Select, Book, Release, MarkPrefillDone, Renew, health, and
the Booking context manager, replays and background renewal."""

from __future__ import annotations

import threading
import time

import pytest

import kvrouter
from conftest import Model, wait_until
from kvrouter import Overrides, Scope


def test_health_answers_serving(router: kvrouter.Router) -> None:
    assert router.health() == kvrouter.SERVING


def test_select_books_nothing_and_names_a_registered_worker(router: kvrouter.Router, model: Model) -> None:
    selection = router.select(model.name, token_ids=list(range(64)))
    assert selection.worker_id in model.workers
    assert selection.endpoint.startswith("http://127.0.0.1:")
    assert selection.policy == "kv"
    assert selection.view_version > 0
    assert selection.load == kvrouter.RankLoad(0, 0, 0)
    assert selection.explanation is None
    assert model.bookings() == []


def test_select_with_explain_carries_the_decision(router: kvrouter.Router, model: Model) -> None:
    selection = router.select(model.name, isl_tokens=100, explain=True)
    assert selection.explanation is not None
    assert selection.explanation.kind == "select"
    assert selection.explanation.picked.worker_id == selection.worker_id
    assert {c.worker_id for c in selection.explanation.candidates} == set(model.workers)


def test_select_honours_pinned_allowed_overrides_and_global_scope(router: kvrouter.Router, model: Model) -> None:
    assert router.select(model.name, isl_tokens=32, pinned_worker="w2").worker_id == "w2"
    assert router.select(model.name, isl_tokens=32, pinned_worker="w2", pinned_dp_rank=0).dp_rank == 0
    assert router.select(model.name, isl_tokens=32, allowed_workers=["w1"]).worker_id == "w1"
    scaled = router.select(model.name, isl_tokens=160, allowed_workers=["w1"],
                           overrides=Overrides(prefill_load_scale=2.0))
    plain = router.select(model.name, isl_tokens=160, allowed_workers=["w1"],
                          overrides=Overrides(prefill_load_scale=1.0))
    assert scaled.cost > plain.cost
    global_pick = router.select(model.name, isl_tokens=32, scope=Scope.GLOBAL)
    assert global_pick.region == "default"
    assert global_pick.router_endpoint  # set on global calls


def test_book_with_context_manager_releases_on_normal_exit(router: kvrouter.Router, model: Model) -> None:
    with router.book(model.name, token_ids=list(range(48)), expected_output_tokens=16) as booking:
        live = model.bookings(booking.request_id)
        assert [(b.attempt, b.worker_id) for b in live] == [(booking.attempt, booking.selection.worker_id)]
        assert booking.replay is False and booking.client_replays == 0
        assert booking.region == "default"
        assert booking.endpoint == booking.worker.endpoint
        assert booking.lease_expires_unix_ms > time.time() * 1000
    assert booking.released
    assert model.bookings() == []


def test_book_context_manager_releases_on_exception(router: kvrouter.Router, model: Model) -> None:
    with pytest.raises(RuntimeError, match="engine failed"):
        with router.book(model.name, isl_tokens=64) as booking:
            assert len(model.bookings()) == 1
            raise RuntimeError("engine failed")
    assert booking.released
    assert model.bookings() == []


def test_release_is_idempotent_and_fenced_by_attempt(router: kvrouter.Router, model: Model) -> None:
    booking = router.book(model.name, isl_tokens=64)
    assert router.release(model.name, booking.request_id, booking.attempt + 1) is False  # a stale attempt
    assert len(model.bookings()) == 1
    assert booking.release() is True
    assert booking.release() is True  # the first answer again, nothing sent
    assert router.release(model.name, booking.request_id, booking.attempt) is False
    assert model.bookings() == []


def test_mark_prefill_done_frees_the_prefill_tokens(router: kvrouter.Router, model: Model) -> None:
    with router.book(model.name, isl_tokens=512, pinned_worker="w1") as booking:
        def prefill_of_w1() -> int:
            w1 = next(w for w in model.state().workers if w.config.worker_id == "w1")
            return w1.ranks[0].load.prefill_tokens
        assert prefill_of_w1() == 512
        assert model.bookings(booking.request_id)[0].prefill_done is False
        assert booking.mark_prefill_done() is True
        assert model.bookings(booking.request_id)[0].prefill_done is True
        assert prefill_of_w1() == 0
    assert booking.mark_prefill_done() is False  # released: no longer live


def test_renew_extends_the_lease(router: kvrouter.Router, model: Model) -> None:
    with router.book(model.name, isl_tokens=64) as booking:
        before = booking.lease_expires_unix_ms
        booked_at = model.bookings()[0].booked_unix_ms
        wait_until(lambda: time.time() * 1000 > booked_at + 2, what="the clock to pass the booking's millisecond")
        assert booking.renew() is True
        assert booking.lease_expires_unix_ms > before
        assert model.bookings()[0].lease_expires_unix_ms == booking.lease_expires_unix_ms
    renewal = router.renew(model.name, booking.request_id, booking.attempt)
    assert renewal.applied is False


def test_keep_alive_renews_in_the_background_until_release(router: kvrouter.Router, model: Model) -> None:
    with router.book(model.name, isl_tokens=64) as booking:
        first = booking.lease_expires_unix_ms
        with booking.keep_alive(interval=0.05) as keeper:
            wait_until(lambda: keeper.renewals >= 3, what="three background renewals")
            assert booking.lease_expires_unix_ms > first
            assert model.bookings()[0].lease_expires_unix_ms >= booking.lease_expires_unix_ms - 1
        assert keeper.stopped and not booking.lost
        renewals = keeper.renewals
        keeper2 = booking.keep_alive(interval=0.05)
    # release stopped the second keeper
    assert keeper2.stopped
    assert renewals >= 3 and model.bookings() == []


def test_keep_alive_notices_a_booking_that_is_gone(router: kvrouter.Router, model: Model) -> None:
    booking = router.book(model.name, isl_tokens=64, pinned_worker="w2")
    keeper = booking.keep_alive(interval=0.05)
    dropped = router.workers.deregister(model.name, "w2")
    assert dropped.applied and dropped.dropped_bookings == 1
    wait_until(lambda: booking.lost, what="the keeper to find the booking gone")
    assert keeper.stopped
    assert booking.release() is False


def test_a_second_book_with_the_same_request_id_is_a_replay(router: kvrouter.Router, model: Model) -> None:
    first = router.book(model.name, request_id="same-id", isl_tokens=64)
    again = router.book(model.name, request_id="same-id", isl_tokens=64)
    assert (again.replay, again.attempt, again.selection.worker_id) == (True, first.attempt,
                                                                        first.selection.worker_id)
    assert len(model.bookings("same-id")) == 1
    assert first.release() is True
    assert again.release() is False  # the same booking: already freed
    assert model.bookings() == []


def test_concurrent_books_of_one_request_id_hold_one_booking(router: kvrouter.Router, model: Model) -> None:
    results: list = []
    start = threading.Barrier(8)

    def book() -> None:
        start.wait()
        results.append(router.book(model.name, request_id="contended", isl_tokens=64))

    threads = [threading.Thread(target=book) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8
    assert len({b.attempt for b in results}) == 1
    assert sum(1 for b in results if not b.replay) == 1
    assert len(model.bookings("contended")) == 1
    results[0].release()
    assert model.bookings() == []


def test_reclaim_frees_what_a_request_id_holds(router: kvrouter.Router, model: Model) -> None:
    router.book(model.name, request_id="abandoned", isl_tokens=64)  # its caller never releases it
    assert router.reclaim(model.name, "abandoned") is True
    assert model.bookings() == []
    assert router.reclaim(model.name, "never-booked") is False  # booked anew, and freed
    assert model.bookings() == []


def test_a_default_request_id_is_unique_per_book(router: kvrouter.Router, model: Model) -> None:
    with router.book(model.name, isl_tokens=8) as a, router.book(model.name, isl_tokens=8) as b:
        assert a.request_id != b.request_id and len(a.request_id) == 32
        assert len(model.bookings()) == 2
    assert model.bookings() == []


def test_reclaim_of_a_model_that_cannot_book_reports_nothing_held(router: kvrouter.Router, model: Model) -> None:
    router.admin.set_policy(model.name, parameters={"active_decode_blocks_threshold": 0.5})
    for worker in model.workers:
        router.workers.report_load(model.name, worker, [{"dp_rank": 0, "active_decode_blocks": 900}])
    assert router.reclaim(model.name, "nothing-here") is False  # refused Overloaded: nothing was held
    with pytest.raises(kvrouter.InvalidArgument):
        router.reclaim(model.name, "x" * 300)  # a refusal of the arguments says nothing: raised

