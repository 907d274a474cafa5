"""The typed results against a real router node: a prefill/decode pair's decode half (Selection.decode,
decode_explanation), the booking state's decode rank (ModelState / BookingState), the session outcome of a Book
(Booking.session), and the strict data-parallel-rank pick (pinned_dp_rank alone)."""

from __future__ import annotations

import uuid
from typing import Iterator, List

import grpc
import pytest

import kvrouter
from kvrouter.client import BookingBase
from kvrouter.v1 import router_pb2, router_pb2_grpc

P_D_WORKERS = (("p1", kvrouter.WorkerRole.PREFILL), ("d1", kvrouter.WorkerRole.DECODE),
               ("d2", kvrouter.WorkerRole.DECODE))


@pytest.fixture
def pd_model(router: kvrouter.Router) -> Iterator[str]:
    """A model of one prefill worker and two decode workers."""
    name = f"test/pd-{uuid.uuid4().hex[:12]}"
    for i, (worker, role) in enumerate(P_D_WORKERS):
        router.workers.register(name, worker, max_num_batched_tokens=8192, total_kv_blocks=1000, block_size=16,
                                endpoint=f"http://127.0.0.1:{18100 + i}", role=role)
    try:
        yield name
    finally:
        for worker, _ in P_D_WORKERS:
            router.workers.deregister(name, worker)


@pytest.fixture
def raw_router(node) -> Iterator[router_pb2_grpc.RouterStub]:
    """The Router service's bare stub, for the fields the client's calls do not send yet (a session id)."""
    with grpc.insecure_channel(node.target) as channel:
        yield router_pb2_grpc.RouterStub(channel)


def test_a_pairs_decode_half_and_its_booking_state_are_typed(router: kvrouter.Router, pd_model: str) -> None:
    with router.book(pd_model, isl_tokens=100) as booking:
        selection = booking.selection
        assert selection.disaggregated
        assert selection.worker_id == "p1"
        decode = selection.decode
        assert isinstance(decode, kvrouter.DecodeSelection)
        assert decode.worker_id in ("d1", "d2")
        assert decode.endpoint == f"http://127.0.0.1:{18101 if decode.worker_id == 'd1' else 18102}"
        # the decode rank holds the request's blocks (ceil(100 / 16)), the prefill rank its prefill
        assert decode.load == kvrouter.RankLoad(1, 0, 7)
        assert decode.worker == kvrouter.WorkerEndpoint(decode.worker_id, 0, decode.endpoint, decode.worker.region)
        assert "decode=" in repr(selection)

        state = kvrouter.ModelState(router.admin.get_model_state(pd_model))
        booked = state.booking(booking.request_id)
        assert booked is not None and booked.disaggregated
        assert booked.rank == kvrouter.Rank("p1", 0)
        assert booked.decode == kvrouter.Rank(decode.worker_id, 0)
        assert (booked.prefill_tokens, booked.decode_blocks, booked.prefill_done) == (100, 7, False)
        assert booked.attempt == booking.attempt
        assert [b.request_id for b in state.bookings] == [booking.request_id]

        assert booking.mark_prefill_done()
        after = kvrouter.ModelState(router.admin.get_model_state(pd_model)).booking(booking.request_id)
        assert after is not None and after.prefill_done
    assert kvrouter.ModelState(router.admin.get_model_state(pd_model)).booking(booking.request_id) is None


def test_a_single_rank_has_no_decode_half(router: kvrouter.Router, model) -> None:
    with router.book(model.name, isl_tokens=32) as booking:
        assert not booking.selection.disaggregated
        assert booking.selection.decode is None
        assert booking.selection.decode_explanation is None
        booked = kvrouter.ModelState(router.admin.get_model_state(model.name)).booking(booking.request_id)
        assert booked is not None and booked.decode is None and not booked.disaggregated
        assert booking.session is None


def test_an_explained_pair_carries_the_decode_halfs_explanation(router: kvrouter.Router, pd_model: str) -> None:
    selection = router.select(pd_model, isl_tokens=100, explain=True)
    assert selection.decode is not None
    explanation = selection.decode_explanation
    assert explanation is not None
    assert explanation.picked.worker_id == selection.decode.worker_id
    assert selection.explanation is not None and selection.explanation.picked.worker_id == "p1"
    # the decode half's candidates are the decode workers: the prefill worker is filtered by its role
    assert {f.worker_id for f in explanation.filtered} == {"p1"}


def _book(stub: router_pb2_grpc.RouterStub, model: str, session: str, **fields) -> BookingBase:
    answer = stub.Book(router_pb2.RouteRequest(model=model, request_id=uuid.uuid4().hex, isl_tokens=32,
                                               session_id=session, **fields), timeout=10)
    return BookingBase(model, answer)


def test_a_books_session_outcome_is_typed(router: kvrouter.Router, raw_router, model) -> None:
    held: List[BookingBase] = []
    try:
        first = _book(raw_router, model.name, "chat-1", pinned_worker="w1",
                      session_mode=router_pb2.SESSION_MODE_HARD)
        held.append(first)
        assert first.session == kvrouter.SessionOutcome("chat-1", kvrouter.SessionMode.HARD,
                                                        kvrouter.SessionBinding.BOUND, None)
        kept = _book(raw_router, model.name, "chat-1", session_mode=router_pb2.SESSION_MODE_HARD)
        held.append(kept)
        assert kept.session is not None and kept.session.binding is kvrouter.SessionBinding.KEPT
        assert kept.worker.worker_id == "w1" and kept.session.previous is None
        # a request's own pin wins over the binding: the session moves, and says where from
        moved = _book(raw_router, model.name, "chat-1", pinned_worker="w2")
        held.append(moved)
        assert moved.session is not None
        assert moved.session.binding is kvrouter.SessionBinding.REBOUND
        assert moved.session.binding == "rebound"
        assert moved.session.mode is kvrouter.SessionMode.SOFT  # the model's default mode
        assert moved.session.previous == kvrouter.Rank("w1", 0)
    finally:
        for b in held:
            router.release(model.name, b.request_id, b.attempt)


def test_a_dp_rank_alone_picks_that_rank_of_any_worker(router: kvrouter.Router, make_model) -> None:
    model = make_model(dp_size=2)
    picked = {router.select(model.name, isl_tokens=32, pinned_dp_rank=1).dp_rank for _ in range(4)}
    assert picked == {1}
    with pytest.raises(kvrouter.FailedPrecondition) as refused:
        router.select(model.name, isl_tokens=32, pinned_dp_rank=2)
    assert refused.value.reason == "UNKNOWN_DP_RANK"
    with pytest.raises(kvrouter.FailedPrecondition):
        router.book(model.name, isl_tokens=32, pinned_dp_rank=2)
    assert model.bookings() == []
