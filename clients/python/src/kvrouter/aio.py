"""The asyncio client (grpc.aio): :class:`AsyncRouter`, :class:`AsyncWorkers`, :class:`AsyncAdmin` and
:class:`AsyncBooking`, with the same calls and guarantees as the sync client (:mod:`kvrouter.client`).

Create an :class:`AsyncRouter` inside the event loop that uses it. Cancelling a task that awaits a call cancels
the call: a Book cancelled so is undone by the router when its cancel reaches it (``netty`` binding).
``async with router.book(...)`` releases on normal exit, on an exception and when the task is cancelled (a release
that a further cancellation cuts off is finished by a task of its own).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from types import TracebackType
from typing import Any, Awaitable, Generator, Iterable, Mapping, Optional, Sequence, Set, Tuple, Type, Union

from grpc_health.v1 import health_pb2

from kvrouter import _requests as req
from kvrouter._transport import AsyncTransport, Owners, RetryPolicy, Tls, book_outcome_unknown
from kvrouter.client import DEFAULT_TIMEOUT, BookingBase, nothing_held, renewal_interval
from kvrouter.errors import BookingOutcomeUnknown, KvRouterError
from kvrouter.types import Disaggregation, Overrides, Renewal, Scope, Selection, SessionMode, WorkerRole
from kvrouter.v1 import admin_pb2, explain_pb2, router_pb2, workers_pb2

log = logging.getLogger("kvrouter")


class AsyncRouter:
    """The asyncio counterpart of :class:`kvrouter.Router` (same arguments, ``owner_direct`` included).
    ``async with AsyncRouter(...)`` or ``await router.close()``."""

    def __init__(self, target: str, token: Optional[str] = None, tls: Union[None, bool, Tls] = None, *,
                 timeout: Optional[float] = DEFAULT_TIMEOUT, retry: RetryPolicy = RetryPolicy(),
                 options: Sequence[Tuple[str, Any]] = (), owner_direct: bool = True) -> None:
        self.timeout = req.timeout(timeout)
        self._transport = AsyncTransport(target, token, tls, options, retry)
        #: whether regional Books go to the model's owner node (:class:`kvrouter.Router`)
        self.owner_direct = bool(owner_direct)
        self._owners = Owners(target)
        # releases that a cancellation cut off, finished by tasks of their own (the loop keeps only weak references
        # to tasks)
        self._background: Set["asyncio.Task[Any]"] = set()
        #: Workers calls
        self.workers = AsyncWorkers(self)
        #: Admin calls
        self.admin = AsyncAdmin(self)

    def _timeout(self, timeout: Optional[float]) -> Optional[float]:
        return self.timeout if timeout is req.UNSET else req.timeout(timeout)

    async def _call(self, method: str, service: str, request: Any, timeout: Optional[float], via: str = "") -> Any:
        answer, _, _ = await self._transport.call(lambda stubs: getattr(getattr(stubs, service), method), request,
                                                  self._timeout(timeout), method, via=via)
        return answer

    def _spawn(self, coroutine: Awaitable[Any]) -> "asyncio.Task[Any]":
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def close(self) -> None:
        """Waits for releases finishing in the background, then closes the channel."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self._transport.close()

    async def __aenter__(self) -> "AsyncRouter":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- Router service

    async def select(self, model: str, *, token_ids: Optional[Sequence[int]] = None,
                     block_hashes: Optional[Sequence[int]] = None, isl_tokens: Optional[int] = None,
                     expected_output_tokens: int = 0, lora_name: str = "", cache_salt: str = "",
                     pinned_worker: Optional[str] = None, pinned_dp_rank: Optional[int] = None,
                     allowed_workers: Sequence[str] = (), priority: int = 0, overrides: Optional[Overrides] = None,
                     excluded_workers: Sequence[str] = (), required_taints: Sequence[str] = (),
                     preferred_taints: Sequence[str] = (), preferred_taint_multiplier: Optional[float] = None,
                     disaggregation: Disaggregation = Disaggregation.AUTO,
                     scope: Scope = Scope.UNSPECIFIED, explain: bool = False, request_id: str = "",
                     timeout: Optional[float] = req.UNSET) -> Selection:
        """As :meth:`kvrouter.Router.select`."""
        request = req.route_request(
            model, request_id=request_id, for_book=False, token_ids=token_ids, block_hashes=block_hashes,
            isl_tokens=isl_tokens, expected_output_tokens=expected_output_tokens, lora_name=lora_name,
            cache_salt=cache_salt, pinned_worker=pinned_worker, pinned_dp_rank=pinned_dp_rank,
            allowed_workers=allowed_workers, priority=priority, overrides=overrides, scope=scope, explain=explain,
            excluded_workers=excluded_workers, required_taints=required_taints, preferred_taints=preferred_taints,
            preferred_taint_multiplier=preferred_taint_multiplier, disaggregation=disaggregation)
        answer = await self._call("Select", "router", request, timeout)
        self._owners.learned(model, scope == Scope.GLOBAL, answer.owner_endpoint, "", "")
        return Selection(answer)

    def book(self, model: str, *, request_id: Optional[str] = None, token_ids: Optional[Sequence[int]] = None,
             block_hashes: Optional[Sequence[int]] = None, isl_tokens: Optional[int] = None,
             expected_output_tokens: int = 0, lora_name: str = "", cache_salt: str = "",
             pinned_worker: Optional[str] = None, pinned_dp_rank: Optional[int] = None,
             allowed_workers: Sequence[str] = (), priority: int = 0, overrides: Optional[Overrides] = None,
             excluded_workers: Sequence[str] = (), required_taints: Sequence[str] = (),
             preferred_taints: Sequence[str] = (), preferred_taint_multiplier: Optional[float] = None,
             disaggregation: Disaggregation = Disaggregation.AUTO,
             strict_priority: int = 0, policy_class: str = "", session_id: str = "",
             session_mode: SessionMode = SessionMode.UNSPECIFIED,
             scope: Scope = Scope.UNSPECIFIED, timeout: Optional[float] = req.UNSET) -> "PendingBooking":
        """As :meth:`kvrouter.Router.book`: ``booking = await router.book(...)``, or
        ``async with router.book(...) as booking:`` which releases it on every way out of the block. The
        arguments are checked here, before anything is sent."""
        request_id = uuid.uuid4().hex if request_id is None else request_id
        request = req.route_request(
            model, request_id=request_id, for_book=True, token_ids=token_ids, block_hashes=block_hashes,
            isl_tokens=isl_tokens, expected_output_tokens=expected_output_tokens, lora_name=lora_name,
            cache_salt=cache_salt, pinned_worker=pinned_worker, pinned_dp_rank=pinned_dp_rank,
            allowed_workers=allowed_workers, priority=priority, overrides=overrides, scope=scope, explain=False,
            excluded_workers=excluded_workers, required_taints=required_taints, preferred_taints=preferred_taints,
            preferred_taint_multiplier=preferred_taint_multiplier, disaggregation=disaggregation,
            strict_priority=strict_priority, policy_class=policy_class, session_id=session_id,
            session_mode=session_mode)
        return PendingBooking(self, model, request, self._timeout(timeout))

    async def _book(self, model: str, request: router_pb2.RouteRequest, timeout: Optional[float]) -> "AsyncBooking":
        global_scope = int(request.scope) == int(Scope.GLOBAL)
        via = self._owners.via(model, global_scope) if self.owner_direct else ""
        try:
            answer, replays, answered_via = await self._transport.call(lambda stubs: stubs.router.Book, request,
                                                                       timeout, "Book", numbered=True, via=via)
        except KvRouterError as e:
            if book_outcome_unknown(e):
                raise BookingOutcomeUnknown(request.request_id, e) from None
            raise
        self._owners.learned(model, global_scope, answer.selection.owner_endpoint, via, answered_via)
        return AsyncBooking(self, model, answer, replays, answered_via)

    async def release(self, model: str, request_id: str, attempt: int, region: str = "", *,
                      timeout: Optional[float] = req.UNSET, via: str = "") -> bool:
        """As :meth:`kvrouter.Router.release`."""
        return bool((await self._call("Release", "router", req.booking_ref(model, request_id, attempt, region),
                                      timeout, via)).applied)

    async def mark_prefill_done(self, model: str, request_id: str, attempt: int, region: str = "", *,
                                timeout: Optional[float] = req.UNSET, via: str = "") -> bool:
        """As :meth:`kvrouter.Router.mark_prefill_done`."""
        ref = req.booking_ref(model, request_id, attempt, region)
        return bool((await self._call("MarkPrefillDone", "router", ref, timeout, via)).applied)

    async def renew(self, model: str, request_id: str, attempt: int, region: str = "", *,
                    timeout: Optional[float] = req.UNSET, via: str = "") -> Renewal:
        """As :meth:`kvrouter.Router.renew`."""
        answer = await self._call("Renew", "router", req.booking_ref(model, request_id, attempt, region), timeout,
                                  via)
        return Renewal(bool(answer.applied), answer.lease_expires_unix_ms)

    async def reclaim(self, model: str, request_id: str, *, isl_tokens: int = 1, scope: Scope = Scope.UNSPECIFIED,
                      timeout: Optional[float] = req.UNSET) -> bool:
        """As :meth:`kvrouter.Router.reclaim`."""
        try:
            booking = await self.book(model, request_id=request_id, isl_tokens=isl_tokens, scope=scope,
                                      timeout=timeout)
        except KvRouterError as e:
            if nothing_held(e):
                return False
            raise
        await booking.release(timeout=timeout)
        return booking.replay

    async def health(self, service: str = "", *, timeout: Optional[float] = req.UNSET) -> int:
        """As :meth:`kvrouter.Router.health`."""
        answer = await self._call("Check", "health", health_pb2.HealthCheckRequest(service=req.text(
            "service", service, required=False)), timeout)
        return int(answer.status)


class PendingBooking:
    """A Book not sent yet: await it for an :class:`AsyncBooking`, or use it as ``async with`` (books on entry,
    releases on exit). Sent at most once."""

    def __init__(self, router: AsyncRouter, model: str, request: router_pb2.RouteRequest,
                 timeout: Optional[float]) -> None:
        self._router = router
        self._model = model
        self._request = request
        self._timeout = timeout
        self._booking: Optional[AsyncBooking] = None
        self._sent = False

    async def _send(self) -> "AsyncBooking":
        if self._sent:
            raise RuntimeError("this Book was already sent")
        self._sent = True
        self._booking = await self._router._book(self._model, self._request, self._timeout)
        return self._booking

    def __await__(self) -> Generator[Any, None, "AsyncBooking"]:
        return self._send().__await__()

    async def __aenter__(self) -> "AsyncBooking":
        return await self._send()

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        if self._booking is not None:
            await self._booking.__aexit__(exc_type, exc, tb)


class AsyncBooking(BookingBase):
    """As :class:`kvrouter.Booking`, with async calls; ``async with booking:`` releases it on every way out,
    task cancellation included (a release the cancellation cut off is finished by a task of its own, which
    :meth:`AsyncRouter.close` waits for)."""

    def __init__(self, router: AsyncRouter, model: str, proto: router_pb2.Booking, client_replays: int = 0,
                 booked_via: str = "") -> None:
        super().__init__(model, proto, client_replays, booked_via)
        self._router = router
        self._release_task: Optional["asyncio.Task[bool]"] = None
        self._keep_alive: Optional[AsyncKeepAlive] = None

    @property
    def lost(self) -> bool:
        """True once a background renewal found the booking gone."""
        return self._keep_alive is not None and self._keep_alive.lost

    async def mark_prefill_done(self, *, timeout: Optional[float] = req.UNSET) -> bool:
        """Tells the router the prefill finished; true if the booking was live."""
        return await self._router.mark_prefill_done(self.model, self.request_id, self.attempt, self.region,
                                                    timeout=timeout, via=self.booked_via)

    async def renew(self, *, timeout: Optional[float] = req.UNSET) -> bool:
        """Extends the lease (updating :attr:`lease_expires_unix_ms`); false if the booking no longer exists."""
        renewal = await self._router.renew(self.model, self.request_id, self.attempt, self.region, timeout=timeout,
                                           via=self.booked_via)
        if renewal.applied:
            self.lease_expires_unix_ms = renewal.lease_expires_unix_ms
        return renewal.applied

    def keep_alive(self, interval: Optional[float] = None) -> "AsyncKeepAlive":
        """Renews the lease in a task until :meth:`release` or the returned object's ``stop``
        (``async with booking.keep_alive():``). Interval as :meth:`kvrouter.Booking.keep_alive`."""
        if self._keep_alive is not None and not self._keep_alive.stopped:
            raise RuntimeError("this booking is already kept alive")
        self._keep_alive = AsyncKeepAlive(self, interval)
        return self._keep_alive

    async def release(self, *, timeout: Optional[float] = req.UNSET) -> bool:
        """Frees the booking (once: later calls return the first answer). True if it was live until now. If the
        awaiting task is cancelled meanwhile, the release is finished by a task of its own (Release is idempotent)
        and the cancellation goes on."""
        if self._released is not None:
            return self._released
        if self._release_task is not None:  # finishing after a cancelled release
            return await asyncio.shield(self._release_task)
        if self._keep_alive is not None:
            await self._keep_alive.stop()
        try:
            return self._record(await self._router.release(self.model, self.request_id, self.attempt, self.region,
                                                           timeout=timeout, via=self.booked_via))
        except asyncio.CancelledError:
            # the call may have been cut off before it reached the router: send it again, out of reach of the
            # cancelled task (AsyncRouter.close waits for it)
            self._release_task = self._router._spawn(self._release_again(timeout))
            raise

    def _record(self, applied: bool) -> bool:
        if self._released is None:
            self._released = applied
        return self._released

    async def _release_again(self, timeout: Optional[float]) -> bool:
        return self._record(await self._router.release(self.model, self.request_id, self.attempt, self.region,
                                                       timeout=timeout, via=self.booked_via))

    async def __aenter__(self) -> "AsyncBooking":
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        try:
            await self.release()
        except KvRouterError as e:
            if exc_type is None:
                raise
            log.warning("kvrouter: releasing %s/%s attempt %d failed on the way out of an exception: %s",
                        self.model, self.request_id, self.attempt, e)
        except asyncio.CancelledError:
            # cancelled again while releasing: the release goes on in its own task
            if exc_type is None or not issubclass(exc_type, asyncio.CancelledError):
                raise


class AsyncKeepAlive:
    """Renews a booking's lease in a task until stopped; :attr:`lost` once the booking is gone."""

    def __init__(self, booking: AsyncBooking, interval: Optional[float]) -> None:
        if interval is not None:
            req.timeout(interval)
        self._booking = booking
        self._interval = interval
        self.lost = False
        self.error: Optional[KvRouterError] = None
        self.renewals = 0
        self._task = asyncio.ensure_future(self._run())

    @property
    def stopped(self) -> bool:
        return self._task.done()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(renewal_interval(self._interval, self._booking.lease_expires_unix_ms))
            try:
                applied = await self._booking.renew()
            except KvRouterError as e:
                self.error = e
                log.warning("kvrouter: renewing %s/%s failed: %s", self._booking.model, self._booking.request_id, e)
                continue
            self.renewals += 1
            if not applied:
                self.lost = True
                log.warning("kvrouter: booking %s/%s attempt %d is gone; renewals stopped", self._booking.model,
                            self._booking.request_id, self._booking.attempt)
                return

    async def stop(self) -> None:
        """Stops renewing (a renewal in flight is cancelled)."""
        if self._task is asyncio.current_task():
            return
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass

    async def __aenter__(self) -> "AsyncKeepAlive":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class AsyncWorkers:
    """As :class:`kvrouter.client.Workers`, async."""

    def __init__(self, router: AsyncRouter) -> None:
        self._router = router

    async def register(self, model: str, worker_id: str, *, max_num_batched_tokens: int, total_kv_blocks: int,
                       block_size: int, endpoint: str = "", dp_start: int = 0, dp_size: int = 1, region: str = "",
                       role: WorkerRole = WorkerRole.UNSPECIFIED, taints: Sequence[str] = (),
                       lora_adapters: Sequence[str] = (),
                       timeout: Optional[float] = req.UNSET) -> workers_pb2.Registered:
        """As :meth:`kvrouter.client.Workers.register`."""
        answer: workers_pb2.Registered = await self._router._call("Register", "workers", req.registration(
            model, worker_id, max_num_batched_tokens=max_num_batched_tokens, total_kv_blocks=total_kv_blocks,
            block_size=block_size, endpoint=endpoint, dp_start=dp_start, dp_size=dp_size, region=region, role=role,
            taints=taints, lora_adapters=lora_adapters), timeout)
        return answer

    async def deregister(self, model: str, worker_id: str, *,
                         timeout: Optional[float] = req.UNSET) -> workers_pb2.Deregistered:
        """As :meth:`kvrouter.client.Workers.deregister`."""
        answer: workers_pb2.Deregistered = await self._router._call(
            "Deregister", "workers", req.worker_key(model, worker_id), timeout)
        return answer

    async def report_load(self, model: str, worker_id: str,
                          ranks: Iterable[Union[workers_pb2.RankLoadReport, Mapping[str, int]]], *,
                          timeout: Optional[float] = req.UNSET) -> bool:
        """As :meth:`kvrouter.client.Workers.report_load`."""
        return bool((await self._router._call("ReportLoad", "workers", req.load_report(model, worker_id, ranks),
                                              timeout)).applied)

    async def publish_kv_events(self, model: str, worker_id: str, dp_rank: int,
                                events: Sequence[workers_pb2.KvEvent], *,
                                timeout: Optional[float] = req.UNSET) -> workers_pb2.KvEventAck:
        """As :meth:`kvrouter.client.Workers.publish_kv_events`."""
        batch = req.kv_event_batch(model, worker_id, dp_rank, events)
        answer: workers_pb2.KvEventAck = await self._router._call("PublishKvEvents", "workers", batch, timeout)
        return answer


class AsyncAdmin:
    """As :class:`kvrouter.client.Admin`, async."""

    def __init__(self, router: AsyncRouter) -> None:
        self._router = router

    async def set_policy(self, model: str, policy: str = "", parameters: Mapping[str, object] = {}, *,
                         timeout: Optional[float] = req.UNSET) -> admin_pb2.PolicySet:
        """As :meth:`kvrouter.client.Admin.set_policy`."""
        answer: admin_pb2.PolicySet = await self._router._call(
            "SetPolicy", "admin", req.set_policy(model, policy, parameters), timeout)
        return answer

    async def get_model_state(self, model: str, *, timeout: Optional[float] = req.UNSET) -> admin_pb2.ModelState:
        """As :meth:`kvrouter.client.Admin.get_model_state`."""
        answer: admin_pb2.ModelState = await self._router._call(
            "GetModelState", "admin", req.model_state_request(model), timeout)
        return answer

    async def list_models(self, *, timeout: Optional[float] = req.UNSET) -> list[str]:
        """As :meth:`kvrouter.client.Admin.list_models`."""
        return list((await self._router._call("ListModels", "admin", req.LIST_MODELS, timeout)).models)

    async def explain_recent(self, model: str, limit: int = 0, *,
                             timeout: Optional[float] = req.UNSET) -> explain_pb2.ExplainReply:
        """As :meth:`kvrouter.client.Admin.explain_recent`."""
        answer: explain_pb2.ExplainReply = await self._router._call(
            "ExplainRecent", "admin", req.explain_request(model, limit), timeout)
        return answer
