"""The routing arguments of Select and Book against a live node: sessions, excluded workers, required and preferred
taints, LoRA adapters, disaggregation, the admission queue's strict tier and policy class. Where a pick is at stake, the test first
makes a worker costlier by holding a booking pinned to it, so a Book that still lands there did so because of the
argument under test."""

from __future__ import annotations

import asyncio
from typing import Callable

import pytest

import kvrouter
from conftest import Model, until
from kvrouter import Disaggregation, ModelState, Rank, SessionBinding, SessionMode, SessionOutcome, WorkerRole

#: the prompt of the Books that make a worker costlier
HEAVY = 512
#: the prompt of the Books under test
LIGHT = 64


def register(model: Model, worker: str, *, role: WorkerRole = WorkerRole.UNSPECIFIED,
             taints: tuple[str, ...] = (), lora_adapters: tuple[str, ...] = ()) -> None:
    endpoint = f"http://127.0.0.1:{18100 + len(model.workers)}"
    model.router.workers.register(model.name, worker, max_num_batched_tokens=8192, total_kv_blocks=1000,
                                  block_size=model.block_size, endpoint=endpoint, role=role, taints=taints,
                                  lora_adapters=lora_adapters)
    model.workers.append(worker)


@pytest.fixture
def tainted(make_model: Callable[..., Model]) -> Model:
    """A model with worker ``h100`` (taints ``gpu=h100``, ``zone=eu-1``) and ``a100`` (``gpu=a100``)."""
    m = make_model(workers=0)
    register(m, "h100", taints=("gpu=h100", "zone=eu-1"))
    register(m, "a100", taints=("gpu=a100",))
    return m


def test_a_hard_session_keeps_to_its_bound_rank_where_a_soft_one_moves(router: kvrouter.Router, model: Model) -> None:
    first = router.book(model.name, isl_tokens=LIGHT, pinned_worker="w1", session_id="chat-1",
                        session_mode=SessionMode.HARD)
    assert first.session == SessionOutcome("chat-1", SessionMode.HARD, SessionBinding.BOUND, None)
    with router.book(model.name, isl_tokens=HEAVY, pinned_worker="w1"):
        with router.book(model.name, isl_tokens=LIGHT) as control:
            assert control.selection.worker_id == "w2"  # w1 is the costlier now
            assert control.session is None
        for _ in range(3):
            with router.book(model.name, isl_tokens=LIGHT, session_id="chat-1",
                             session_mode=SessionMode.HARD) as kept:
                assert kept.selection.worker_id == "w1"
                assert kept.session == SessionOutcome("chat-1", SessionMode.HARD, SessionBinding.KEPT, None)
        with router.book(model.name, isl_tokens=LIGHT, session_id="chat-1",
                         session_mode=SessionMode.SOFT) as moved:
            assert moved.selection.worker_id == "w2"
            assert moved.session == SessionOutcome("chat-1", SessionMode.SOFT, SessionBinding.REBOUND, Rank("w1", 0))
    first.release()
    assert model.bookings() == []


def test_excluded_workers_are_never_candidates(router: kvrouter.Router, model: Model) -> None:
    held = [router.book(model.name, isl_tokens=HEAVY, excluded_workers=["w1"]) for _ in range(3)]
    # w2 holds all three: without the exclusion the second would have gone to w1
    assert [b.selection.worker_id for b in held] == ["w2", "w2", "w2"]
    assert router.select(model.name, isl_tokens=LIGHT, excluded_workers=("w1",)).worker_id == "w2"
    with pytest.raises(kvrouter.NoEndpoints):
        router.book(model.name, isl_tokens=LIGHT, excluded_workers=["w1", "w2"])
    with pytest.raises(kvrouter.PinnedWorkerNotAllowed):
        router.book(model.name, isl_tokens=LIGHT, pinned_worker="w1", excluded_workers=["w1"])
    for b in held:
        b.release()
    assert model.bookings() == []


def test_required_taints_keep_only_the_workers_carrying_all_of_them(router: kvrouter.Router,
                                                                     tainted: Model) -> None:
    with router.book(tainted.name, isl_tokens=HEAVY, pinned_worker="h100"):
        assert router.select(tainted.name, isl_tokens=LIGHT, required_taints=["gpu=h100"]).worker_id == "h100"
        with router.book(tainted.name, isl_tokens=LIGHT) as control:
            assert control.selection.worker_id == "a100"
        with router.book(tainted.name, isl_tokens=LIGHT, required_taints=["zone=eu-1", "gpu=h100"]) as booking:
            assert booking.selection.worker_id == "h100"
        before = len(tainted.bookings())
        with pytest.raises(kvrouter.RequiredTaintsUnmet) as refused:
            router.book(tainted.name, isl_tokens=LIGHT, required_taints=["gpu=h100", "gpu=a100"])
        assert isinstance(refused.value, kvrouter.FailedPrecondition)
        assert refused.value.reason == kvrouter.Reason.REQUIRED_TAINTS_UNMET
        assert len(tainted.bookings()) == before  # nothing booked
        with pytest.raises(kvrouter.InvalidArgument) as malformed:
            router.book(tainted.name, isl_tokens=LIGHT, required_taints=["not a taint"])
        assert malformed.value.reason == kvrouter.Reason.INVALID_TAINT
    assert tainted.bookings() == []


def test_preferred_taints_scale_the_cost_by_the_multiplier(router: kvrouter.Router, tainted: Model) -> None:
    with router.book(tainted.name, isl_tokens=HEAVY, pinned_worker="h100"):
        def pick(**placement: object) -> str:
            with router.book(tainted.name, isl_tokens=LIGHT, **placement) as booking:  # type: ignore[arg-type]
                return booking.selection.worker_id
        assert pick() == "a100"
        assert pick(preferred_taints=["gpu=h100"], preferred_taint_multiplier=0.0) == "h100"
        assert pick(preferred_taints=["gpu=h100"], preferred_taint_multiplier=1.0) == "a100"
        # every preferred taint must be carried: a100 lacks zone=eu-1, so only h100's cost is scaled
        assert pick(preferred_taints=["gpu=h100", "zone=eu-1"], preferred_taint_multiplier=0.0) == "h100"
        # not applied when the request pins a worker
        scaled = router.select(tainted.name, isl_tokens=LIGHT, pinned_worker="h100", preferred_taints=["gpu=h100"],
                               preferred_taint_multiplier=0.0)
        plain = router.select(tainted.name, isl_tokens=LIGHT, pinned_worker="h100")
        assert scaled.cost == plain.cost > 0
        with pytest.raises(kvrouter.InvalidArgument) as refused:
            router.select(tainted.name, isl_tokens=LIGHT, preferred_taints=["gpu=h100"],
                          preferred_taint_multiplier=1.5)
        assert refused.value.reason == kvrouter.Reason.MALFORMED
    assert tainted.bookings() == []


def test_a_lora_book_lands_on_the_worker_that_has_the_adapter_loaded(router: kvrouter.Router,
                                                                     make_model: Callable[..., Model]) -> None:
    m = make_model(workers=0)
    register(m, "base")
    register(m, "sql", lora_adapters=("sql-lora",))
    assert {w.config.worker_id: list(w.config.lora_adapters) for w in m.state().workers} == {
        "base": [], "sql": ["sql-lora"]}
    with router.book(m.name, isl_tokens=HEAVY, pinned_worker="sql"):
        with router.book(m.name, isl_tokens=LIGHT) as control:
            assert control.selection.worker_id == "base"  # sql is the costlier now
        for _ in range(3):
            with router.book(m.name, isl_tokens=LIGHT, lora_name="sql-lora") as booking:
                assert booking.selection.worker_id == "sql"
    assert m.bookings() == []


async def test_a_disaggregated_book_holds_and_releases_both_ranks(arouter: kvrouter.AsyncRouter,
                                                                   make_model: Callable[..., Model]) -> None:
    m = make_model(workers=0)
    register(m, "p1", role=WorkerRole.PREFILL)
    register(m, "d1", role=WorkerRole.DECODE)

    def loads() -> dict:
        return {w.config.worker_id: w.ranks[0].load for w in m.state().workers}

    async with arouter.book(m.name, isl_tokens=256, expected_output_tokens=64,
                            disaggregation=Disaggregation.DISAGGREGATED) as booking:
        assert booking.selection.disaggregated
        assert booking.selection.worker_id == "p1"
        decode = booking.selection.decode
        assert decode is not None and decode.worker_id == "d1"
        held = ModelState(m.state()).booking(booking.request_id)
        assert held is not None and held.rank == Rank("p1", 0) and held.decode == Rank("d1", 0)
        now = loads()
        assert now["p1"].prefill_tokens == 256 and now["p1"].in_flight == 1
        assert now["d1"].decode_blocks == held.decode_blocks > 0 and now["d1"].in_flight == 1
    assert m.bookings() == []
    assert all((load.in_flight, load.prefill_tokens, load.decode_blocks) == (0, 0, 0) for load in loads().values())
    single = await arouter.select(m.name, isl_tokens=256, disaggregation=Disaggregation.DISAGGREGATED)
    assert single.disaggregated and single.worker_id == "p1"
    with pytest.raises(kvrouter.FailedPrecondition) as refused:
        await arouter.book(m.name, isl_tokens=64, disaggregation=Disaggregation.AGGREGATED)
    assert refused.value.reason == kvrouter.Reason.NO_AGGREGATED_WORKERS
    assert m.bookings() == []


async def test_the_async_client_sends_the_session_and_the_exclusions(arouter: kvrouter.AsyncRouter,
                                                                     model: Model) -> None:
    async with arouter.book(model.name, isl_tokens=LIGHT, excluded_workers=["w2"], session_id="agent-7",
                            session_mode=SessionMode.HARD) as first:
        assert first.selection.worker_id == "w1"
        assert first.session == SessionOutcome("agent-7", SessionMode.HARD, SessionBinding.BOUND, None)
        async with arouter.book(model.name, isl_tokens=LIGHT, session_id="agent-7",
                                session_mode=SessionMode.HARD) as again:
            assert again.selection.worker_id == "w1"
            assert again.session is not None and again.session.binding == SessionBinding.KEPT
    assert model.bookings() == []


def test_strict_priority_and_policy_class_reach_the_admission_queue(router: kvrouter.Router, model: Model) -> None:
    # a class with a threshold turns the queue on (a Book of a model that queues nothing is in no class); nothing
    # here comes near it, so no Book waits
    router.admin.set_policy(model.name, parameters={"class.gold": "threshold_frac=0.99"})
    with router.book(model.name, isl_tokens=LIGHT, policy_class="gold", strict_priority=7) as gold:
        assert gold.policy_class == "gold"
    with router.book(model.name, isl_tokens=LIGHT) as plain:
        assert plain.policy_class == "default"
    with pytest.raises(kvrouter.InvalidArgument) as refused:
        router.book(model.name, isl_tokens=LIGHT, strict_priority=65536)
    assert refused.value.reason == kvrouter.Reason.INVALID_SIZE
    assert model.bookings() == []


async def test_a_higher_strict_tier_leaves_the_queue_first(arouter: kvrouter.AsyncRouter,
                                                           make_model: Callable[..., Model]) -> None:
    m = make_model(workers=1)
    # queueing on: the one rank is busy while any booking holds prefill tokens
    m.router.admin.set_policy(m.name, parameters={"queue_prefill_tokens_threshold": 0})
    holder = await arouter.book(m.name, isl_tokens=LIGHT)
    low = asyncio.ensure_future(arouter.book(m.name, isl_tokens=LIGHT, strict_priority=0))
    await until(lambda: m.state().pending == 1, what="the tier-0 Book to wait")
    high = asyncio.ensure_future(arouter.book(m.name, isl_tokens=LIGHT, strict_priority=5))
    await until(lambda: m.state().pending == 2, what="the tier-5 Book to wait")
    await holder.release()
    # first come would be the tier-0 Book; the tier-5 one leaves first, and the pool is busy again
    first = await high
    assert not low.done() and m.state().pending == 1
    await first.release()
    second = await low
    assert second.queued_micros > first.queued_micros
    await second.release()
    assert m.bookings() == [] and m.state().pending == 0
