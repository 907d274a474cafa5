"""For an engine the router's connectors do not cover: publish its KV cache events and report its load.

:class:`KvEventPublisher` keeps one event stream of one (worker, dp rank): every :meth:`~KvEventPublisher.stored`,
:meth:`~KvEventPublisher.removed` and :meth:`~KvEventPublisher.cleared` takes the stream's next event id, and
:meth:`~KvEventPublisher.flush` sends what is queued in batches within the router's limits (512 events, 8,192 block
hashes). A Stored event carries, for each block, the engine's own id (``block_hash``, what Removed names later)
and the router's sequence hash of the block's tokens (``tokens_hash``, computed here with :mod:`kvrouter.hashing`,
chained from the parent block's). A batch whose call fails stays queued and is sent again by the next flush: the
router drops event ids it has already applied.

Event ids are one sequence per (worker, dp rank) for as long as the worker is registered; an engine that restarts
deregisters and registers again (which drops its old stream) before publishing from id 0.

:class:`LoadReporter` sends the engine's own per-rank load (``ReportLoad``), once or every ``interval`` from a
callback; the reports double as the worker's heartbeat.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from kvrouter import _requests as req
from kvrouter import hashing
from kvrouter.errors import KvRouterError
from kvrouter.types import StorageTier
from kvrouter.v1 import workers_pb2

if TYPE_CHECKING:
    from kvrouter.aio import AsyncWorkers
    from kvrouter.client import Workers

log = logging.getLogger("kvrouter")

#: the router's limits on one KvEventBatch (workers.proto)
MAX_EVENTS_PER_BATCH = 512
MAX_BLOCK_HASHES_PER_BATCH = 8192

RankLoad = Union[workers_pb2.RankLoadReport, Mapping[str, int]]


@dataclass(frozen=True)
class KvEventsSent:
    """What a flush sent and what the router did with it, summed over its batches (``KvEventAck``)."""

    batches: int = 0
    events: int = 0
    applied: int = 0
    gaps: int = 0
    held: int = 0

    def plus(self, events: int, ack: workers_pb2.KvEventAck) -> "KvEventsSent":
        return KvEventsSent(self.batches + 1, self.events + events, self.applied + ack.applied,
                            self.gaps + ack.gaps, self.held + ack.held)


def _hash_count(event: workers_pb2.KvEvent) -> int:
    kind = event.WhichOneof("data")
    if kind == "stored":
        return len(event.stored.blocks)
    if kind == "removed":
        return len(event.removed.block_hashes)
    return 0


class _KvEventStream:
    """The events of one (worker, dp rank), their ids and the blocks held (to chain a child's tokens hash)."""

    def __init__(self, model: str, worker_id: str, *, block_size: int, dp_rank: int, first_event_id: int) -> None:
        self.model = req.text("model", model)
        self.worker_id = req.text("worker_id", worker_id)
        self.dp_rank = req.uint("dp_rank", dp_rank)
        self.block_size = req.uint("block_size", block_size, minimum=1)
        self.next_event_id = req.uint("first_event_id", first_event_id, req.U64)
        self._lock = threading.Lock()
        self._queued: List[workers_pb2.KvEvent] = []
        # engine block id -> (tokens hash, tiers it is stored on as a bit set)
        self._blocks: Dict[int, Tuple[int, int]] = {}

    @property
    def pending(self) -> int:
        """Events queued, not yet acknowledged by the router."""
        return len(self._queued)

    def tokens_hash(self, block_hash: int) -> Optional[int]:
        """The tokens hash published for an engine block this stream holds, or None."""
        entry = self._blocks.get(block_hash)
        return None if entry is None else entry[0]

    def _append(self, event: workers_pb2.KvEvent) -> None:
        event.event_id = self.next_event_id
        self.next_event_id += 1
        self._queued.append(event)

    def stored(self, token_ids: Sequence[int], *, block_hashes: Optional[Sequence[int]] = None,
               parent_block_hash: Optional[int] = None, tier: StorageTier = StorageTier.DEVICE,
               lora_name: str = "", cache_salt: str = "") -> List[int]:
        """Queues a Stored event for the full blocks ``token_ids`` (a whole number of blocks) placed after the
        engine block ``parent_block_hash`` (None: at the start of a prompt). ``block_hashes`` are the engine's ids
        of the new blocks (default: their tokens hashes). Returns the tokens hashes. ``lora_name`` and
        ``cache_salt`` are the request's, as in its RouteRequest."""
        tier_value = req.storage_tier(tier)
        if len(token_ids) == 0 or len(token_ids) % self.block_size:
            raise ValueError(f"token_ids must be a positive multiple of the block size {self.block_size}, "
                             f"got {len(token_ids)}")
        seed = hashing.seed(req.text("cache_salt", cache_salt, required=False),
                            req.text("lora_name", lora_name, required=False))
        with self._lock:
            parent_tokens_hash = None
            if parent_block_hash is not None:
                parent_tokens_hash = self.tokens_hash(req.uint("parent_block_hash", parent_block_hash, req.U64))
                if parent_tokens_hash is None:
                    raise ValueError(f"parent block {parent_block_hash} is not held by this stream: publish it first")
            tokens_hashes = hashing.sequence_hashes(token_ids, self.block_size, seed=seed, parent=parent_tokens_hash)
            ids = list(tokens_hashes) if block_hashes is None else list(block_hashes)
            if len(ids) != len(tokens_hashes):
                raise ValueError(f"{len(ids)} block_hashes for {len(tokens_hashes)} blocks")
            for block_id in ids:
                req.uint("block_hashes entry", block_id, req.U64)
            parent = parent_block_hash
            # one event per MAX_BLOCK_HASHES_PER_BATCH blocks, each under the previous one's last block
            for start in range(0, len(ids), MAX_BLOCK_HASHES_PER_BATCH):
                chunk = range(start, min(start + MAX_BLOCK_HASHES_PER_BATCH, len(ids)))
                stored = workers_pb2.KvStored(
                    blocks=[workers_pb2.StoredBlock(block_hash=ids[i], tokens_hash=tokens_hashes[i]) for i in chunk],
                    storage_tier=tier_value)  # type: ignore[arg-type]
                if parent is not None:
                    stored.parent_block_hash = parent
                self._append(workers_pb2.KvEvent(stored=stored))
                parent = ids[chunk[-1]]
            for block_id, tokens_hash in zip(ids, tokens_hashes):
                _, tiers = self._blocks.get(block_id, (tokens_hash, 0))
                self._blocks[block_id] = (tokens_hash, tiers | (1 << tier_value))
            return tokens_hashes

    def removed(self, block_hashes: Sequence[int], *, tier: StorageTier = StorageTier.DEVICE) -> None:
        """Queues a Removed event: the engine evicted these blocks from ``tier``."""
        tier_value = req.storage_tier(tier)
        ids = [req.uint("block_hashes entry", b, req.U64) for b in block_hashes]
        if not ids:
            raise ValueError("removed needs at least one block hash")
        with self._lock:
            for start in range(0, len(ids), MAX_BLOCK_HASHES_PER_BATCH):
                self._append(workers_pb2.KvEvent(removed=workers_pb2.KvRemoved(
                    block_hashes=ids[start:start + MAX_BLOCK_HASHES_PER_BATCH],
                    storage_tier=tier_value)))  # type: ignore[arg-type]
            for block_id in ids:
                entry = self._blocks.get(block_id)
                if entry is not None:
                    tiers = entry[1] & ~(1 << tier_value)
                    if tiers:
                        self._blocks[block_id] = (entry[0], tiers)
                    else:
                        del self._blocks[block_id]

    def cleared(self) -> None:
        """Queues a Cleared event: the engine dropped every block of this rank."""
        with self._lock:
            self._append(workers_pb2.KvEvent(cleared=workers_pb2.KvCleared()))
            self._blocks.clear()

    def next_batch(self) -> List[workers_pb2.KvEvent]:
        """The leading queued events that fit one batch (left queued until :meth:`acknowledge`)."""
        with self._lock:
            batch: List[workers_pb2.KvEvent] = []
            hashes = 0
            for event in self._queued:
                count = _hash_count(event)
                if batch and (len(batch) == MAX_EVENTS_PER_BATCH or hashes + count > MAX_BLOCK_HASHES_PER_BATCH):
                    break
                batch.append(event)
                hashes += count
            return batch

    def acknowledge(self, count: int) -> None:
        with self._lock:
            del self._queued[:count]


class KvEventPublisher(_KvEventStream):
    """One (worker, dp rank)'s KV events, published through a sync :class:`kvrouter.client.Workers`."""

    def __init__(self, workers: "Workers", model: str, worker_id: str, *, block_size: int, dp_rank: int = 0,
                 first_event_id: int = 0) -> None:
        super().__init__(model, worker_id, block_size=block_size, dp_rank=dp_rank, first_event_id=first_event_id)
        self._workers = workers
        self._flush_lock = threading.Lock()

    def flush(self, *, timeout: Optional[float] = req.UNSET) -> KvEventsSent:
        """Sends every queued event, in order, batch by batch. On an error the unsent events stay queued."""
        sent = KvEventsSent()
        with self._flush_lock:
            while True:
                batch = self.next_batch()
                if not batch:
                    return sent
                ack = self._workers.publish_kv_events(self.model, self.worker_id, self.dp_rank, batch,
                                                      timeout=timeout)
                self.acknowledge(len(batch))
                sent = sent.plus(len(batch), ack)


class AsyncKvEventPublisher(_KvEventStream):
    """As :class:`KvEventPublisher`, through an :class:`kvrouter.aio.AsyncWorkers`."""

    def __init__(self, workers: "AsyncWorkers", model: str, worker_id: str, *, block_size: int, dp_rank: int = 0,
                 first_event_id: int = 0) -> None:
        super().__init__(model, worker_id, block_size=block_size, dp_rank=dp_rank, first_event_id=first_event_id)
        self._workers = workers
        self._flush_lock = asyncio.Lock()

    async def flush(self, *, timeout: Optional[float] = req.UNSET) -> KvEventsSent:
        """As :meth:`KvEventPublisher.flush`."""
        sent = KvEventsSent()
        async with self._flush_lock:
            while True:
                batch = self.next_batch()
                if not batch:
                    return sent
                ack = await self._workers.publish_kv_events(self.model, self.worker_id, self.dp_rank, batch,
                                                            timeout=timeout)
                self.acknowledge(len(batch))
                sent = sent.plus(len(batch), ack)


class LoadReporter:
    """Reports one worker's engine load through a sync :class:`kvrouter.client.Workers`: :meth:`report` once, or
    :meth:`start` a daemon thread that reports ``source()`` every ``interval`` seconds until :meth:`stop`."""

    def __init__(self, workers: "Workers", model: str, worker_id: str) -> None:
        self._workers = workers
        self.model = req.text("model", model)
        self.worker_id = req.text("worker_id", worker_id)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        #: reports sent by the background thread, and its last error (reporting goes on)
        self.reports = 0
        self.error: Optional[KvRouterError] = None

    def report(self, ranks: Iterable[RankLoad], *, timeout: Optional[float] = req.UNSET) -> bool:
        return self._workers.report_load(self.model, self.worker_id, ranks, timeout=timeout)

    def start(self, source: Callable[[], Iterable[RankLoad]], interval: float) -> "LoadReporter":
        req.timeout(interval)
        if self._thread is not None:
            raise RuntimeError("this reporter is already started")

        def run() -> None:
            while True:
                try:
                    self.report(source())
                    self.reports += 1
                except KvRouterError as e:
                    self.error = e
                    log.warning("kvrouter: load report of %s/%s failed: %s", self.model, self.worker_id, e)
                if self._stop.wait(interval):
                    return

        self._thread = threading.Thread(target=run, name=f"kvrouter-load-{self.worker_id}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> "LoadReporter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class AsyncLoadReporter:
    """As :class:`LoadReporter`, through an :class:`kvrouter.aio.AsyncWorkers`; :meth:`start` runs a task."""

    def __init__(self, workers: "AsyncWorkers", model: str, worker_id: str) -> None:
        self._workers = workers
        self.model = req.text("model", model)
        self.worker_id = req.text("worker_id", worker_id)
        self._task: Optional["asyncio.Task[Any]"] = None
        self.reports = 0
        self.error: Optional[KvRouterError] = None

    async def report(self, ranks: Iterable[RankLoad], *, timeout: Optional[float] = req.UNSET) -> bool:
        return await self._workers.report_load(self.model, self.worker_id, ranks, timeout=timeout)

    def start(self, source: Callable[[], Iterable[RankLoad]], interval: float) -> "AsyncLoadReporter":
        req.timeout(interval)
        if self._task is not None:
            raise RuntimeError("this reporter is already started")

        async def run() -> None:
            while True:
                try:
                    await self.report(source())
                    self.reports += 1
                except KvRouterError as e:
                    self.error = e
                    log.warning("kvrouter: load report of %s/%s failed: %s", self.model, self.worker_id, e)
                await asyncio.sleep(interval)

        self._task = asyncio.ensure_future(run())
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def __aenter__(self) -> "AsyncLoadReporter":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
