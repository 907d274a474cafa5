"""Errors map to the documented exceptions: every (status, reason) of the root README's "Errors" to its class, and
the rejections a live node gives, each with its status, reason and nothing changed."""

from __future__ import annotations

import pickle

import grpc
import pytest

import kvrouter
from conftest import Model
from kvrouter import errors
from kvrouter.errors import Reason

C = grpc.StatusCode

# (status, reason) -> the exception the client raises; the root README's "Errors" and "Security" lists
DOCUMENTED = [
    (C.INVALID_ARGUMENT, Reason.EMPTY_MODEL, kvrouter.InvalidArgument),
    (C.INVALID_ARGUMENT, Reason.FIELD_TOO_LONG, kvrouter.InvalidArgument),
    (C.INVALID_ARGUMENT, Reason.MALFORMED, kvrouter.InvalidArgument),
    (C.INVALID_ARGUMENT, Reason.UNKNOWN_ENUM_VALUE, kvrouter.InvalidArgument),
    (C.NOT_FOUND, Reason.UNKNOWN_MODEL, kvrouter.UnknownModel),
    (C.NOT_FOUND, Reason.UNKNOWN_WORKER, kvrouter.UnknownWorker),
    (C.ALREADY_EXISTS, Reason.WORKER_CONFIG_CONFLICT, kvrouter.WorkerConfigConflict),
    (C.FAILED_PRECONDITION, Reason.PINNED_WORKER_NOT_ALLOWED, kvrouter.PinnedWorkerNotAllowed),
    (C.FAILED_PRECONDITION, Reason.MODEL_NOT_IN_REGION, kvrouter.ModelNotInRegion),
    (C.FAILED_PRECONDITION, Reason.REQUIRED_TAINTS_UNMET, kvrouter.RequiredTaintsUnmet),
    (C.FAILED_PRECONDITION, Reason.NO_PREFILL_WORKERS, kvrouter.FailedPrecondition),
    (C.INVALID_ARGUMENT, Reason.INVALID_TAINT, kvrouter.InvalidArgument),
    (C.UNAVAILABLE, Reason.NO_ENDPOINTS, kvrouter.NoEndpoints),
    (C.UNAVAILABLE, Reason.ALL_WORKERS_OVERLOADED, kvrouter.Overloaded),
    (C.UNAVAILABLE, Reason.PINNED_WORKER_OVERLOADED, kvrouter.Overloaded),
    (C.UNAVAILABLE, Reason.RECOVERING, kvrouter.Recovering),
    (C.UNAVAILABLE, Reason.REGION_UNREACHABLE, kvrouter.RegionUnreachable),
    (C.RESOURCE_EXHAUSTED, Reason.QUEUE_LIMIT, kvrouter.QueueLimit),
    (C.RESOURCE_EXHAUSTED, Reason.MESSAGE_TOO_LARGE, kvrouter.MessageTooLarge),
    (C.DEADLINE_EXCEEDED, Reason.QUEUE_DEADLINE_EXCEEDED, kvrouter.QueueDeadlineExceeded),
    (C.DEADLINE_EXCEEDED, Reason.ADMISSION_TIMEOUT, kvrouter.AdmissionTimeout),
    (C.DEADLINE_EXCEEDED, Reason.DEADLINE_TOO_SHORT, kvrouter.DeadlineTooShort),
    (C.UNAUTHENTICATED, Reason.MISSING_TOKEN, kvrouter.MissingToken),
    (C.UNAUTHENTICATED, Reason.UNKNOWN_TOKEN, kvrouter.UnknownToken),
    (C.PERMISSION_DENIED, Reason.MISSING_ROLE, kvrouter.MissingRole),
    # without a reason: the status's family
    (C.UNAVAILABLE, None, kvrouter.Unavailable),
    (C.DEADLINE_EXCEEDED, None, kvrouter.DeadlineExceeded),
    (C.RESOURCE_EXHAUSTED, None, kvrouter.ResourceExhausted),
    (C.CANCELLED, None, kvrouter.Cancelled),
    (C.INTERNAL, None, kvrouter.KvRouterError),
]


@pytest.mark.parametrize("code,reason,expected", DOCUMENTED)
def test_each_documented_rejection_maps_to_its_exception(code: grpc.StatusCode, reason: str, expected: type) -> None:
    error = errors.error_for(code, reason, "message")
    assert type(error) is expected
    assert (error.code, error.reason, error.details) == (code, reason, "message")


def test_a_reason_under_an_unexpected_status_keeps_the_status_family() -> None:
    # a reason class is used only when its status matches: the family a caller catches follows the status
    error = errors.error_for(C.INVALID_ARGUMENT, Reason.UNKNOWN_MODEL, "odd")
    assert type(error) is kvrouter.InvalidArgument and error.reason == Reason.UNKNOWN_MODEL


def test_errors_survive_pickling() -> None:
    error = pickle.loads(pickle.dumps(errors.error_for(C.NOT_FOUND, Reason.UNKNOWN_MODEL, "gone")))
    assert type(error) is kvrouter.UnknownModel and (error.reason, error.details) == ("UNKNOWN_MODEL", "gone")
    unknown = pickle.loads(pickle.dumps(kvrouter.BookingOutcomeUnknown("r1", error)))
    assert unknown.request_id == "r1" and isinstance(unknown.cause, kvrouter.UnknownModel)


def test_unknown_model(router: kvrouter.Router) -> None:
    with pytest.raises(kvrouter.UnknownModel) as raised:
        router.select("test/never-registered", isl_tokens=10)
    assert raised.value.code == C.NOT_FOUND and raised.value.reason == "UNKNOWN_MODEL"
    assert "never-registered" in raised.value.details
    with pytest.raises(kvrouter.UnknownModel):
        router.book("test/never-registered", isl_tokens=10)
    with pytest.raises(kvrouter.UnknownModel):
        router.admin.get_model_state("test/never-registered")
    with pytest.raises(kvrouter.UnknownModel):
        router.admin.explain_recent("test/never-registered")
    assert "test/never-registered" not in router.admin.list_models()


def test_no_endpoints_unknown_worker_and_pinned_not_allowed(router: kvrouter.Router, model: Model) -> None:
    with pytest.raises(kvrouter.NoEndpoints):
        router.select(model.name, isl_tokens=10, allowed_workers=["not-a-worker"])
    with pytest.raises(kvrouter.UnknownWorker):
        router.book(model.name, isl_tokens=10, pinned_worker="not-a-worker")
    with pytest.raises(kvrouter.UnknownWorker):
        router.select(model.name, isl_tokens=10, pinned_worker="w1", pinned_dp_rank=5)
    with pytest.raises(kvrouter.PinnedWorkerNotAllowed) as raised:
        router.book(model.name, isl_tokens=10, pinned_worker="w1", allowed_workers=["w2"])
    assert raised.value.code == C.FAILED_PRECONDITION
    assert model.bookings() == []


def test_overloaded_when_every_rank_is_above_a_busy_threshold(router: kvrouter.Router, model: Model) -> None:
    router.admin.set_policy(model.name, parameters={"active_decode_blocks_threshold": 0.5})
    for worker in model.workers:
        assert router.workers.report_load(model.name, worker, [{"dp_rank": 0, "active_decode_blocks": 900}])
    with pytest.raises(kvrouter.Overloaded) as raised:
        router.book(model.name, isl_tokens=10)
    assert raised.value.reason == Reason.ALL_WORKERS_OVERLOADED
    with pytest.raises(kvrouter.Overloaded) as raised:
        router.select(model.name, isl_tokens=10, pinned_worker="w1")
    assert raised.value.reason == Reason.PINNED_WORKER_OVERLOADED
    router.workers.report_load(model.name, "w1", [{"dp_rank": 0, "active_decode_blocks": 10}])
    assert router.select(model.name, isl_tokens=10).worker_id == "w1"
    assert model.bookings() == []


def test_queue_limit(router: kvrouter.Router, make_model) -> None:
    m = make_model(workers=1)
    router.admin.set_policy(m.name, parameters={"queue_threshold_frac": 0.0, "max_pending": 0})
    with router.book(m.name, isl_tokens=64):
        with pytest.raises(kvrouter.QueueLimit) as raised:
            router.book(m.name, isl_tokens=64)
        assert raised.value.code == C.RESOURCE_EXHAUSTED
        assert len(m.bookings()) == 1


def test_a_queued_book_whose_deadline_passes_leaves_nothing(router: kvrouter.Router, make_model) -> None:
    m = make_model(workers=1)
    router.admin.set_policy(m.name, parameters={"queue_threshold_frac": 0.0})
    with router.book(m.name, isl_tokens=64) as holder:
        with pytest.raises(kvrouter.DeadlineExceeded) as raised:
            router.book(m.name, request_id="times-out", isl_tokens=64, timeout=0.6)
        # the router answers before the caller's deadline (its ask ends a margin earlier)
        assert raised.value.reason in (Reason.QUEUE_DEADLINE_EXCEEDED, Reason.ADMISSION_TIMEOUT)
        state = m.state()
        assert state.pending == 0
        assert [b.request_id for b in state.bookings] == [holder.request_id]


def test_deadline_too_short(router: kvrouter.Router, model: Model) -> None:
    # the session node's deadline margin is 300 ms: 250 ms left is refused at once, nothing booked
    with pytest.raises(kvrouter.DeadlineTooShort) as raised:
        router.book(model.name, isl_tokens=10, timeout=0.25)
    assert raised.value.code == C.DEADLINE_EXCEEDED
    assert model.bookings() == []


def test_worker_config_conflict_changes_nothing(router: kvrouter.Router, model: Model) -> None:
    with pytest.raises(kvrouter.WorkerConfigConflict) as raised:
        router.workers.register(model.name, "w1", max_num_batched_tokens=8192, total_kv_blocks=5,
                                block_size=16)
    assert raised.value.code == C.ALREADY_EXISTS
    w1 = next(w for w in model.state().workers if w.config.worker_id == "w1")
    assert w1.config.total_kv_blocks == 1000


def test_limits_the_router_checks_come_back_as_invalid_argument(router: kvrouter.Router, model: Model) -> None:
    with pytest.raises(kvrouter.InvalidArgument) as raised:
        router.book(model.name, request_id="r" * 300, isl_tokens=10)
    assert raised.value.reason == Reason.FIELD_TOO_LONG
    with pytest.raises(kvrouter.InvalidArgument) as raised:
        router.select(model.name, isl_tokens=200_000)
    assert raised.value.reason == Reason.TOO_MANY_TOKENS
    with pytest.raises(kvrouter.InvalidArgument) as raised:
        router.admin.set_policy(model.name, policy="fastest")
    assert raised.value.reason == Reason.UNKNOWN_POLICY
    with pytest.raises(kvrouter.InvalidArgument) as raised:
        router.workers.register(model.name, "w9", max_num_batched_tokens=8192, total_kv_blocks=10,
                                block_size=100_000)
    assert raised.value.reason == Reason.INVALID_BLOCK_SIZE
    assert model.bookings() == [] and len(model.state().workers) == 2


def test_region_unreachable(router: kvrouter.Router, model: Model) -> None:
    with pytest.raises(kvrouter.RegionUnreachable) as raised:
        router.release(model.name, "some-request", 1, region="mars")
    assert raised.value.code == C.UNAVAILABLE


async def test_the_async_client_raises_the_same_exceptions(arouter: kvrouter.AsyncRouter, model: Model) -> None:
    with pytest.raises(kvrouter.UnknownModel):
        await arouter.select("test/never-registered", isl_tokens=10)
    with pytest.raises(kvrouter.UnknownWorker):
        await arouter.book(model.name, isl_tokens=10, pinned_worker="not-a-worker")
    with pytest.raises(kvrouter.NoEndpoints):
        async with arouter.book(model.name, isl_tokens=10, allowed_workers=["nobody"]):
            pytest.fail("the block must not run")  # pragma: no cover
    assert model.bookings() == []


def test_an_unreachable_router_is_unavailable_and_a_book_is_outcome_unknown() -> None:
    import routers
    port = routers.free_port()  # nothing listens there
    with kvrouter.Router(f"127.0.0.1:{port}", timeout=2.0) as nowhere:
        with pytest.raises(kvrouter.Unavailable) as raised:
            nowhere.select("m", isl_tokens=1)
        assert raised.value.reason is None
        with pytest.raises(kvrouter.BookingOutcomeUnknown):
            nowhere.book("m", isl_tokens=1)
