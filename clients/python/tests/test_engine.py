"""Workers and Admin calls against a live node, and the helpers for an engine without a connector: KV events
(tokens hashes computed in Python) that the router's index then matches, and load reports it then reads."""

from __future__ import annotations

import pytest

import kvrouter
from conftest import Model, until, wait_until
from kvrouter import StorageTier, hashing
from kvrouter.v1 import workers_pb2

BLOCK = 4


@pytest.fixture
def kv_model(make_model) -> Model:
    return make_model(workers=2, block_size=BLOCK)


def overlap(router: kvrouter.Router, model: Model, tokens: list, **kwargs: object) -> tuple[str, int]:
    selection = router.select(model.name, token_ids=tokens, pinned_worker="w2", **kwargs)
    return selection.worker_id, selection.overlap_blocks


def test_register_is_idempotent_and_deregister_drops_bookings(router: kvrouter.Router, model: Model) -> None:
    again = router.workers.register(model.name, "w1", max_num_batched_tokens=8192, total_kv_blocks=1000,
                                    block_size=16, endpoint="http://127.0.0.1:18000")
    assert again.created is False
    added = router.workers.register(model.name, "w3", max_num_batched_tokens=4096, total_kv_blocks=500,
                                    block_size=16, dp_start=2, dp_size=2, endpoint="http://127.0.0.1:18009",
                                    role=kvrouter.WorkerRole.DECODE)
    assert added.created is True and added.view_version > again.view_version
    model.workers.append("w3")
    w3 = next(w for w in model.state().workers if w.config.worker_id == "w3")
    assert ([r.dp_rank for r in w3.ranks], w3.config.role) == ([2, 3], kvrouter.WorkerRole.DECODE)
    # the model has aggregated workers: a Book is aggregated, and a decode worker cannot take it
    with pytest.raises(kvrouter.FailedPrecondition) as refused:
        router.book(model.name, isl_tokens=32, pinned_worker="w3", pinned_dp_rank=3)
    assert refused.value.reason == "PINNED_WORKER_ROLE"
    assert router.workers.deregister(model.name, "w3").dropped_bookings == 0
    router.workers.register(model.name, "w4", max_num_batched_tokens=4096, total_kv_blocks=500, block_size=16,
                            dp_start=2, dp_size=2, endpoint="http://127.0.0.1:18010")
    model.workers.append("w4")
    router.book(model.name, isl_tokens=32, pinned_worker="w4", pinned_dp_rank=3)
    gone = router.workers.deregister(model.name, "w4")
    assert (gone.applied, gone.dropped_bookings) == (True, 1)
    with pytest.raises(kvrouter.UnknownWorker):
        router.workers.deregister(model.name, "w4")
    assert model.bookings() == []


def test_report_load_is_what_the_state_shows(router: kvrouter.Router, model: Model) -> None:
    assert router.workers.report_load(model.name, "w1", [workers_pb2.RankLoadReport(
        dp_rank=0, active_decode_blocks=321, active_prefill_tokens=77, waiting_requests=3)])
    w1 = next(w for w in model.state().workers if w.config.worker_id == "w1")
    reported = w1.ranks[0].reported
    assert (reported.active_decode_blocks, reported.active_prefill_tokens, reported.waiting_requests) == (321, 77, 3)
    assert w1.available


def test_load_reporter_sends_its_source_every_interval(router: kvrouter.Router, model: Model) -> None:
    load = {"blocks": 10}
    with kvrouter.LoadReporter(router.workers, model.name, "w2").start(
            lambda: [{"dp_rank": 0, "active_decode_blocks": load["blocks"]}], interval=0.05) as reporter:
        def reported() -> int:
            w2 = next(w for w in model.state().workers if w.config.worker_id == "w2")
            return w2.ranks[0].reported.active_decode_blocks
        wait_until(lambda: reported() == 10, what="the first report")
        load["blocks"] = 42
        wait_until(lambda: reported() == 42, what="a later report")
    assert reporter.reports >= 2 and reporter.error is None


def test_set_policy_list_models_and_explain(router: kvrouter.Router, model: Model) -> None:
    changed = router.admin.set_policy(model.name, "round_robin", {"seed": 7})
    assert changed.policy == "round_robin"
    state = model.state()
    assert state.policy == "round_robin" and state.policy_parameters["seed"] == "7"
    reset = router.admin.set_policy(model.name, parameters={"seed": None})
    assert reset.view_version > changed.view_version and model.state().policy_parameters["seed"] == ""
    assert model.name in router.admin.list_models()
    with router.book(model.name, request_id="explained", isl_tokens=64):
        router.select(model.name, isl_tokens=64)
        reply = router.admin.explain_recent(model.name, limit=10)
    assert reply.model == model.name
    kinds = [(d.kind, d.request_id) for d in reply.decisions]
    assert ("book", "explained") in kinds and any(k == "select" for k, _ in kinds)
    assert len(router.admin.explain_recent(model.name, limit=1).decisions) == 1


def test_published_blocks_are_found_by_the_router(router: kvrouter.Router, kv_model: Model) -> None:
    tokens = [1000 + i for i in range(26)]
    publisher = kvrouter.KvEventPublisher(router.workers, kv_model.name, "w2", block_size=BLOCK)
    ids = publisher.stored(tokens[:16])
    assert ids == hashing.sequence_hashes(tokens[:16], BLOCK)
    sent = publisher.flush()
    assert (sent.batches, sent.events, sent.applied, sent.gaps) == (1, 1, 1, 0)
    # kv picks the worker that holds the prefix, from the tokens or from their local block hashes
    selection = router.select(kv_model.name, token_ids=tokens)
    assert (selection.worker_id, selection.overlap_blocks, selection.cached_tokens) == ("w2", 4, 16)
    by_hashes = router.select(kv_model.name, block_hashes=hashing.local_block_hashes(tokens, BLOCK),
                              isl_tokens=len(tokens))
    assert (by_hashes.worker_id, by_hashes.overlap_blocks) == ("w2", 4)
    # two more blocks under the last one
    publisher.stored(tokens[16:24], parent_block_hash=ids[-1])
    publisher.flush()
    assert overlap(router, kv_model, tokens) == ("w2", 6)
    assert "w2" in kv_model.state().kv_event_fed_workers
    # evicting block 3 takes the blocks below it with it
    publisher.removed([ids[3]])
    assert publisher.flush().applied == 1
    assert overlap(router, kv_model, tokens) == ("w2", 3)
    publisher.cleared()
    publisher.flush()
    assert overlap(router, kv_model, tokens) == ("w2", 0)


def test_engine_block_ids_salts_and_tiers(router: kvrouter.Router, kv_model: Model) -> None:
    tokens = list(range(7, 7 + 12))
    publisher = kvrouter.KvEventPublisher(router.workers, kv_model.name, "w2", block_size=BLOCK)
    # the engine's own block ids; the tokens hashes under the request's cache salt
    publisher.stored(tokens, block_hashes=[501, 502, 503], cache_salt="tenant-a")
    publisher.flush()
    assert overlap(router, kv_model, tokens, cache_salt="tenant-a") == ("w2", 3)
    assert overlap(router, kv_model, tokens) == ("w2", 0)
    assert overlap(router, kv_model, tokens, cache_salt="tenant-b") == ("w2", 0)
    # a host-tier copy of the first block stays when the device copy goes
    publisher.stored(tokens[:4], block_hashes=[501], cache_salt="tenant-a", tier=StorageTier.HOST)
    publisher.removed([501, 502, 503], tier=StorageTier.DEVICE)
    publisher.flush()
    explained = router.select(kv_model.name, token_ids=tokens, cache_salt="tenant-a", pinned_worker="w2",
                              explain=True)
    assert explained.explanation is not None
    candidate = explained.explanation.candidates[0]
    assert (candidate.device_overlap, candidate.host_overlap) == (0, 1)
    with pytest.raises(ValueError):
        publisher.stored(tokens[4:8], parent_block_hash=999)  # a parent the stream never stored
    with pytest.raises(ValueError):
        publisher.stored(tokens[:5])  # not a whole number of blocks


def test_a_large_flush_is_split_within_the_batch_limits(router: kvrouter.Router, kv_model: Model) -> None:
    publisher = kvrouter.KvEventPublisher(router.workers, kv_model.name, "w1", block_size=BLOCK)
    for i in range(600):  # 600 events of one block each, each under the one before
        publisher.stored([i, i, i, i], block_hashes=[10_000 + i], parent_block_hash=10_000 + i - 1 if i else None)
    assert publisher.pending == 600 and publisher.next_event_id == 600
    sent = publisher.flush()
    assert (sent.batches, sent.events, sent.applied, sent.held, sent.gaps) == (2, 600, 600, 0, 0)
    assert publisher.pending == 0


async def test_async_publisher_and_load_reporter(arouter: kvrouter.AsyncRouter, router: kvrouter.Router,
                                                 kv_model: Model) -> None:
    tokens = list(range(300, 316))
    publisher = kvrouter.AsyncKvEventPublisher(arouter.workers, kv_model.name, "w2", block_size=BLOCK)
    publisher.stored(tokens)
    sent = await publisher.flush()
    assert sent.applied == 1
    assert (await arouter.select(kv_model.name, token_ids=tokens)).overlap_blocks == 4
    reporter = kvrouter.AsyncLoadReporter(arouter.workers, kv_model.name, "w1")
    reporter.start(lambda: [{"dp_rank": 0, "waiting_requests": 5}], interval=0.05)

    def waiting() -> int:
        w1 = next(w for w in kv_model.state().workers if w.config.worker_id == "w1")
        return w1.ranks[0].reported.waiting_requests
    await until(lambda: waiting() == 5, what="the async report")
    await reporter.stop()
    assert reporter.reports >= 1
    assert await arouter.workers.report_load(kv_model.name, "w1", [{"dp_rank": 0, "waiting_requests": 1}])
    registered = await arouter.workers.register(kv_model.name, "w9", max_num_batched_tokens=100,
                                                total_kv_blocks=10, block_size=BLOCK)
    assert registered.created
    assert (await arouter.workers.deregister(kv_model.name, "w9")).applied
    assert (await arouter.admin.set_policy(kv_model.name, "least_in_flight")).policy == "least_in_flight"
    assert (await arouter.admin.get_model_state(kv_model.name)).policy == "least_in_flight"
    assert kv_model.name in await arouter.admin.list_models()
    assert (await arouter.admin.explain_recent(kv_model.name, 1)).model == kv_model.name
