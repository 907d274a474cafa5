"""The sync client: :class:`Router` (Select, Book, Release, ...), its :class:`Workers` and :class:`Admin` calls, and
:class:`Booking`, a booking that releases itself.

A :class:`Router` holds one gRPC channel and is safe to share between threads. Every call takes ``timeout``
(seconds for the whole call, retries included; default the router's ``timeout``) and raises a
:class:`kvrouter.errors.KvRouterError` subclass on an error status.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from types import TracebackType
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple, Type, Union

from grpc_health.v1 import health_pb2

from kvrouter import _requests as req
from kvrouter._transport import Owners, RetryPolicy, Tls, Transport, book_outcome_unknown
from kvrouter.errors import (BookingOutcomeUnknown, InvalidArgument, KvRouterError, PermissionDenied,
                             Unauthenticated)
from kvrouter.types import (Disaggregation, Overrides, Renewal, Scope, Selection, SessionMode, SessionOutcome,
                            WorkerEndpoint, WorkerRole)
from kvrouter.v1 import admin_pb2, explain_pb2, router_pb2, workers_pb2

log = logging.getLogger("kvrouter")

#: The default timeout of a call, in seconds (a Book's includes its wait in the admission queue).
DEFAULT_TIMEOUT = 30.0



class Router:
    """A client of one kvrouter node (or a load balancer in front of a region's nodes).

    ``target`` is ``host:port``; ``token`` a bearer token sent with every call (routers with auth on); ``tls``
    None (plaintext), True (TLS trusting the system's roots) or a :class:`kvrouter.Tls`; ``options`` extra grpcio
    channel options; ``retry`` how calls whose transport failed are sent again. ``owner_direct`` (on by default):
    a regional Book goes to the node that owns the model's admission actor, once an answer named it
    (``Selection.owner_endpoint``), over a channel of its own with the same credentials; ``target`` is the
    fallback when that node cannot be reached (the Book is sent there again with its ``request_id`` and next retry
    number: nothing is booked twice). A booking's Release, MarkPrefillDone and Renew go to the node its Book was
    answered by. Use it as a context manager or call :meth:`close`.
    """

    def __init__(self, target: str, token: Optional[str] = None, tls: Union[None, bool, Tls] = None, *,
                 timeout: Optional[float] = DEFAULT_TIMEOUT, retry: RetryPolicy = RetryPolicy(),
                 options: Sequence[Tuple[str, Any]] = (), owner_direct: bool = True) -> None:
        self.timeout = req.timeout(timeout)
        self._transport = Transport(target, token, tls, options, retry)
        #: whether regional Books go to the model's owner node (see the class)
        self.owner_direct = bool(owner_direct)
        self._owners = Owners(target)
        #: Workers calls (Register, Deregister, ReportLoad, PublishKvEvents)
        self.workers = Workers(self)
        #: Admin calls (SetPolicy, GetModelState, ListModels, ExplainRecent)
        self.admin = Admin(self)

    # ---- plumbing

    def _timeout(self, timeout: Optional[float]) -> Optional[float]:
        return self.timeout if timeout is req.UNSET else req.timeout(timeout)

    def _call(self, method: str, service: str, request: Any, timeout: Optional[float], via: str = "") -> Any:
        answer, _, _ = self._transport.call(lambda stubs: getattr(getattr(stubs, service), method), request,
                                            self._timeout(timeout), method, via=via)
        return answer

    def close(self) -> None:
        """Closes the channels; calls in flight fail."""
        self._transport.close()

    def __enter__(self) -> "Router":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- Router service

    def select(self, model: str, *, token_ids: Optional[Sequence[int]] = None,
               block_hashes: Optional[Sequence[int]] = None, isl_tokens: Optional[int] = None,
               expected_output_tokens: int = 0, lora_name: str = "", cache_salt: str = "",
               pinned_worker: Optional[str] = None, pinned_dp_rank: Optional[int] = None,
               allowed_workers: Sequence[str] = (), priority: int = 0, overrides: Optional[Overrides] = None,
               excluded_workers: Sequence[str] = (), required_taints: Sequence[str] = (),
               preferred_taints: Sequence[str] = (), preferred_taint_multiplier: Optional[float] = None,
               disaggregation: Disaggregation = Disaggregation.AUTO,
               scope: Scope = Scope.UNSPECIFIED, explain: bool = False, request_id: str = "",
               timeout: Optional[float] = req.UNSET) -> Selection:
        """An advisory pick: the worker rank a Book would take now. Books nothing, changes nothing.

        The prompt is ``token_ids``, or ``block_hashes`` (:func:`kvrouter.hashing.local_block_hashes` of its full
        blocks) with ``isl_tokens``, or ``isl_tokens`` alone (no cache overlap). ``pinned_worker`` /
        ``pinned_dp_rank`` restrict the pick to that worker (rank); ``pinned_dp_rank`` alone to every worker's
        rank of that number (:class:`~kvrouter.errors.FailedPrecondition` ``UNKNOWN_DP_RANK`` if none has it);
        ``allowed_workers`` to those; ``excluded_workers`` are never candidates (applied after ``allowed_workers``,
        e.g. the workers a retry already tried; a pinned worker excluded is
        :class:`~kvrouter.errors.PinnedWorkerNotAllowed`). ``scope=GLOBAL`` may answer another region (then
        :attr:`Selection.region` and :attr:`Selection.router_endpoint` only).

        Placement (root README, "Placement constraints"; taints as workers register them, ``key`` or
        ``key=value``): only workers carrying every one of ``required_taints`` are candidates
        (:class:`~kvrouter.errors.RequiredTaintsUnmet` if none does); a rank whose worker carries every one of
        ``preferred_taints`` has its cost multiplied by ``preferred_taint_multiplier`` (in [0, 1]; None: the
        router's 0.5), except when the request pins a worker. ``disaggregation`` (:class:`~kvrouter.Disaggregation`): a
        prefill/decode pair or one rank on a model with prefill and decode workers (:attr:`Selection.decode`).

        ``explain`` asks for the decision's explanation. Raises e.g. :class:`~kvrouter.errors.UnknownModel`,
        :class:`~kvrouter.errors.NoEndpoints`, :class:`~kvrouter.errors.Overloaded`.
        """
        request = req.route_request(
            model, request_id=request_id, for_book=False, token_ids=token_ids, block_hashes=block_hashes,
            isl_tokens=isl_tokens, expected_output_tokens=expected_output_tokens, lora_name=lora_name,
            cache_salt=cache_salt, pinned_worker=pinned_worker, pinned_dp_rank=pinned_dp_rank,
            allowed_workers=allowed_workers, priority=priority, overrides=overrides, scope=scope, explain=explain,
            excluded_workers=excluded_workers, required_taints=required_taints, preferred_taints=preferred_taints,
            preferred_taint_multiplier=preferred_taint_multiplier, disaggregation=disaggregation)
        answer = self._call("Select", "router", request, timeout)
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
             scope: Scope = Scope.UNSPECIFIED, timeout: Optional[float] = req.UNSET) -> "Booking":
        """Books the request onto the picked worker rank until :meth:`Booking.release` (or its lease ends).

        Use the answer as a context manager: ``with router.book(...) as booking:`` releases it on every way out.
        ``request_id`` (default a fresh UUID) identifies the booking: a Book whose ``request_id`` has a live
        booking returns it again (``booking.replay``), so one request never holds two bookings. The prompt and the
        placement arguments as :meth:`select`; a pair (``disaggregation``) is one booking of both ranks.

        ``session_id`` (root README, "Session affinity") binds the conversation to the rank this Book takes, and
        its later Books keep to it, in ``session_mode`` (:class:`~kvrouter.SessionMode`; UNSPECIFIED: the model's
        ``session_mode`` parameter): SOFT weighs the binding against the cost, HARD keeps to the bound rank or
        refuses (:class:`~kvrouter.errors.Overloaded` when that rank is busy). :attr:`Booking.session` says what
        the Book did (:class:`~kvrouter.SessionBinding`). ``session_mode`` needs ``session_id``.

        When the model queues Books (root README, "Admission under pressure"): ``priority`` is the queue's
        priority jump, ``strict_priority`` its strict tier (0 to 65,535: a higher tier leaves first within its
        class), ``policy_class`` the class or tenant family the Book asks for (:attr:`Booking.policy_class` is the
        class it was put in).

        If the answer is lost (the connection drops after the router answered), the Book is sent again with the
        same ``request_id`` and its retry number, within ``timeout``: it returns the booking the router made
        (``replay`` true) or, if the router saw the call end and undid it, books anew (``replay`` false). A replay
        takes the booking over from the lost call, so a replay that is cancelled or times out in its turn is undone
        by the router too. If every replay fails, raises
        :class:`~kvrouter.errors.BookingOutcomeUnknown` (the router may hold a booking: :meth:`reclaim`, or the
        lease ends it). A Book whose ``timeout`` passes raises :class:`~kvrouter.errors.DeadlineExceeded` and is
        undone by the router (on the default ``netty`` binding also when the answer crossed the cancel).
        Other errors as :meth:`select`, plus :class:`~kvrouter.errors.QueueLimit`,
        :class:`~kvrouter.errors.QueueDeadlineExceeded`.
        """
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
        global_scope = scope == Scope.GLOBAL
        via = self._owners.via(model, global_scope) if self.owner_direct else ""
        try:
            answer, replays, answered_via = self._transport.call(lambda stubs: stubs.router.Book, request,
                                                                 self._timeout(timeout), "Book", numbered=True,
                                                                 via=via)
        except KvRouterError as e:
            if book_outcome_unknown(e):
                raise BookingOutcomeUnknown(request_id, e) from None
            raise
        self._owners.learned(model, global_scope, answer.selection.owner_endpoint, via, answered_via)
        return Booking(self, model, answer, replays, answered_via)

    def release(self, model: str, request_id: str, attempt: int, region: str = "", *,
                timeout: Optional[float] = req.UNSET, via: str = "") -> bool:
        """Frees the booking (``attempt`` fences it: a stale attempt frees nothing). True if it was live. ``via``:
        the node to send it to (a booking's :attr:`Booking.booked_via`; empty or unreachable: the configured
        target)."""
        return bool(self._call("Release", "router", req.booking_ref(model, request_id, attempt, region),
                               timeout, via).applied)

    def mark_prefill_done(self, model: str, request_id: str, attempt: int, region: str = "", *,
                          timeout: Optional[float] = req.UNSET, via: str = "") -> bool:
        """Tells the router the booking's prefill finished (its prefill tokens stop counting; the lease is
        renewed). True if the booking was live. ``via`` as :meth:`release`."""
        return bool(self._call("MarkPrefillDone", "router", req.booking_ref(model, request_id, attempt, region),
                               timeout, via).applied)

    def renew(self, model: str, request_id: str, attempt: int, region: str = "", *,
              timeout: Optional[float] = req.UNSET, via: str = "") -> Renewal:
        """Extends the booking's lease; ``applied`` false when it no longer exists. ``via`` as :meth:`release`."""
        answer = self._call("Renew", "router", req.booking_ref(model, request_id, attempt, region), timeout, via)
        return Renewal(bool(answer.applied), answer.lease_expires_unix_ms)

    def reclaim(self, model: str, request_id: str, *, isl_tokens: int = 1, scope: Scope = Scope.UNSPECIFIED,
                timeout: Optional[float] = req.UNSET) -> bool:
        """Frees whatever the router holds for ``request_id`` (after a Book whose outcome is unknown): replays the
        Book and releases what it gets. True if that was the booking the lost Book made (``replay`` true); false
        if the router held nothing: the replay booked anew (that booking is freed too) or was refused (a live
        booking would have been returned instead)."""
        try:
            booking = self.book(model, request_id=request_id, isl_tokens=isl_tokens, scope=scope, timeout=timeout)
        except KvRouterError as e:
            if nothing_held(e):
                return False
            raise
        booking.release(timeout=timeout)
        return booking.replay

    def health(self, service: str = "", *, timeout: Optional[float] = req.UNSET) -> int:
        """The gRPC health status of ``service`` ("" the whole server): a ``HealthCheckResponse.ServingStatus``
        value (``kvrouter.SERVING`` when serving)."""
        answer = self._call("Check", "health", health_pb2.HealthCheckRequest(service=req.text(
            "service", service, required=False)), timeout)
        return int(answer.status)


class BookingBase:
    """What a booking is: the router's answer and the reference Release, MarkPrefillDone and Renew carry."""

    def __init__(self, model: str, proto: router_pb2.Booking, client_replays: int = 0, booked_via: str = "") -> None:
        #: the model booked
        self.model = model
        #: the ``kvrouter.v1.Booking`` answer
        self.proto = proto
        #: the picked worker rank, its overlap, cost and load
        self.selection = Selection(proto.selection)
        self.request_id: str = proto.request_id
        #: fencing token of this booking (unique per model)
        self.attempt: int = proto.attempt
        #: true when the router returned a booking the request_id already had (a replay)
        self.replay: bool = proto.replay
        #: the booked worker's region (sent with Release, MarkPrefillDone and Renew)
        self.region: str = proto.region
        self.queued_micros: int = proto.queued_micros
        #: the admission queue class the Book was put in (``default`` when no declared class takes it)
        self.policy_class: str = proto.policy_class
        #: when the lease ends unless renewed (Renew and MarkPrefillDone renew it)
        self.lease_expires_unix_ms: int = proto.lease_expires_unix_ms
        #: how many times the client sent the Book again after its answer was lost
        self.client_replays = client_replays
        #: the node that answered the Book (the model's owner node, ``host:port``), where Release, MarkPrefillDone
        #: and Renew go; empty: the client's configured target
        self.booked_via = booked_via
        self._released: Optional[bool] = None

    @property
    def worker(self) -> WorkerEndpoint:
        return self.selection.worker

    @property
    def session(self) -> Optional[SessionOutcome]:
        """What the Book did to its session's binding (None when it named no session, affinity is off, or on a
        replay)."""
        # an empty message (some routers set the field on every Book) means no session
        return SessionOutcome.from_proto(self.proto.session) if self.proto.session.session_id else None

    @property
    def endpoint(self) -> str:
        """The booked worker's endpoint: where to send the request."""
        return self.selection.endpoint

    @property
    def released(self) -> bool:
        return self._released is not None

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(model={self.model!r}, request_id={self.request_id!r}, "
                f"attempt={self.attempt}, worker_id={self.selection.worker_id!r}, dp_rank={self.selection.dp_rank}, "
                f"replay={self.replay}, released={self.released})")


class Booking(BookingBase):
    """A live booking: where to send the request, and the calls that end or extend it.

    A context manager: leaving the ``with`` block releases it, whatever ended the block (normal exit, exception,
    ``KeyboardInterrupt``). :meth:`release` is idempotent. A failed release on an exception's way out is logged,
    not raised, so it does not hide the exception.
    """

    def __init__(self, router: Router, model: str, proto: router_pb2.Booking, client_replays: int = 0,
                 booked_via: str = "") -> None:
        super().__init__(model, proto, client_replays, booked_via)
        self._router = router
        self._lock = threading.Lock()
        self._keep_alive: Optional[KeepAlive] = None

    @property
    def lost(self) -> bool:
        """True once a background renewal found the booking gone (expired, freed or its worker deregistered)."""
        return self._keep_alive is not None and self._keep_alive.lost

    def mark_prefill_done(self, *, timeout: Optional[float] = req.UNSET) -> bool:
        """Tells the router the prefill finished; true if the booking was live."""
        return self._router.mark_prefill_done(self.model, self.request_id, self.attempt, self.region,
                                              timeout=timeout, via=self.booked_via)

    def renew(self, *, timeout: Optional[float] = req.UNSET) -> bool:
        """Extends the lease (updating :attr:`lease_expires_unix_ms`); false if the booking no longer exists."""
        renewal = self._router.renew(self.model, self.request_id, self.attempt, self.region, timeout=timeout,
                                     via=self.booked_via)
        if renewal.applied:
            self.lease_expires_unix_ms = renewal.lease_expires_unix_ms
        return renewal.applied

    def keep_alive(self, interval: Optional[float] = None) -> "KeepAlive":
        """Renews the lease in a background thread until :meth:`release` or the returned object's ``stop``
        (``with booking.keep_alive():`` around a long stream). ``interval`` in seconds; default a third of the
        lease's remaining time, at least 1 s."""
        if self._keep_alive is not None and not self._keep_alive.stopped:
            raise RuntimeError("this booking is already kept alive")
        self._keep_alive = KeepAlive(self, interval)
        return self._keep_alive

    def release(self, *, timeout: Optional[float] = req.UNSET) -> bool:
        """Frees the booking (once: later calls return the first answer). True if it was live until now (false also
        when the Release was sent again after a lost answer and found it freed by the first one)."""
        with self._lock:
            if self._released is not None:
                return self._released
            if self._keep_alive is not None:
                self._keep_alive.stop()
            self._released = self._router.release(self.model, self.request_id, self.attempt, self.region,
                                                  timeout=timeout, via=self.booked_via)
            return self._released

    def __enter__(self) -> "Booking":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        try:
            self.release()
        except KvRouterError as e:
            if exc_type is None:
                raise
            log.warning("kvrouter: releasing %s/%s attempt %d failed on the way out of an exception: %s",
                        self.model, self.request_id, self.attempt, e)


def nothing_held(error: KvRouterError) -> bool:
    """True when the router's refusal of a Book means it holds no booking for its request_id (a live one would have
    been returned as a replay); arguments or credentials it refused say nothing of that."""
    return error.reason is not None and not isinstance(error, (InvalidArgument, Unauthenticated, PermissionDenied))


def renewal_interval(interval: Optional[float], lease_expires_unix_ms: int) -> float:
    """The pause before the next renewal: ``interval``, or a third of the lease's remaining time (at least 1 s)."""
    if interval is not None:
        return interval
    remaining = lease_expires_unix_ms / 1000.0 - time.time()
    return max(1.0, remaining / 3.0)


class KeepAlive:
    """Renews a booking's lease in a daemon thread until stopped; :attr:`lost` once the booking is gone."""

    def __init__(self, booking: Booking, interval: Optional[float]) -> None:
        if interval is not None:
            req.timeout(interval)
        self._booking = booking
        self._interval = interval
        self._stop = threading.Event()
        #: the booking no longer exists (a renewal answered applied = false): renewals stopped
        self.lost = False
        #: the last renewal error (renewals go on at the next interval)
        self.error: Optional[KvRouterError] = None
        self.renewals = 0
        self._thread = threading.Thread(target=self._run, name=f"kvrouter-keep-alive-{booking.request_id}",
                                        daemon=True)
        self._thread.start()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def _run(self) -> None:
        while not self._stop.wait(renewal_interval(self._interval, self._booking.lease_expires_unix_ms)):
            try:
                applied = self._booking.renew()
            except KvRouterError as e:
                self.error = e
                log.warning("kvrouter: renewing %s/%s failed: %s", self._booking.model, self._booking.request_id, e)
                continue
            self.renewals += 1
            if not applied:
                self.lost = True
                log.warning("kvrouter: booking %s/%s attempt %d is gone; renewals stopped", self._booking.model,
                            self._booking.request_id, self._booking.attempt)
                self._stop.set()

    def stop(self) -> None:
        """Stops renewing (waits for a renewal in flight)."""
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def __enter__(self) -> "KeepAlive":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Workers:
    """Workers calls: registration, engine-reported load and KV cache events (role ``workers`` with auth on)."""

    def __init__(self, router: Router) -> None:
        self._router = router

    def register(self, model: str, worker_id: str, *, max_num_batched_tokens: int, total_kv_blocks: int,
                 block_size: int, endpoint: str = "", dp_start: int = 0, dp_size: int = 1, region: str = "",
                 role: WorkerRole = WorkerRole.UNSPECIFIED, taints: Sequence[str] = (),
                 lora_adapters: Sequence[str] = (),
                 timeout: Optional[float] = req.UNSET) -> workers_pb2.Registered:
        """Registers a worker with ranks ``[dp_start, dp_start + dp_size)`` in ``role`` (prefill, decode or
        aggregated), carrying ``taints`` (``key`` or ``key=value``, what a request's ``required_taints`` and
        ``preferred_taints`` match), with the LoRA adapters ``lora_adapters`` loaded (a request's ``lora_name``
        naming one goes only to the workers that have it). Idempotent: the same registration again answers
        ``created`` false; another configuration for the same worker raises
        :class:`~kvrouter.errors.WorkerConfigConflict`."""
        answer: workers_pb2.Registered = self._router._call("Register", "workers", req.registration(
            model, worker_id, max_num_batched_tokens=max_num_batched_tokens, total_kv_blocks=total_kv_blocks,
            block_size=block_size, endpoint=endpoint, dp_start=dp_start, dp_size=dp_size, region=region, role=role,
            taints=taints, lora_adapters=lora_adapters), timeout)
        return answer

    def deregister(self, model: str, worker_id: str, *,
                   timeout: Optional[float] = req.UNSET) -> workers_pb2.Deregistered:
        """Removes the worker; its live bookings are dropped (``dropped_bookings``). A worker not registered raises
        :class:`~kvrouter.errors.UnknownWorker`."""
        answer: workers_pb2.Deregistered = self._router._call(
            "Deregister", "workers", req.worker_key(model, worker_id), timeout)
        return answer

    def report_load(self, model: str, worker_id: str, ranks: Iterable[Union[workers_pb2.RankLoadReport,
                                                                           Mapping[str, int]]], *,
                    timeout: Optional[float] = req.UNSET) -> bool:
        """Reports the engine's own load per rank (``dp_rank``, ``active_decode_blocks``,
        ``active_prefill_tokens``, ``waiting_requests``); doubles as the worker's heartbeat: a worker that reported
        once is unavailable after the router's heartbeat timeout without a report."""
        return bool(self._router._call("ReportLoad", "workers", req.load_report(model, worker_id, ranks),
                                       timeout).applied)

    def publish_kv_events(self, model: str, worker_id: str, dp_rank: int, events: Sequence[workers_pb2.KvEvent], *,
                          timeout: Optional[float] = req.UNSET) -> workers_pb2.KvEventAck:
        """Sends one batch of KV events of one (worker, dp rank) (at most 512 events and 8,192 block hashes;
        :class:`kvrouter.KvEventPublisher` builds and splits them)."""
        batch = req.kv_event_batch(model, worker_id, dp_rank, events)
        answer: workers_pb2.KvEventAck = self._router._call("PublishKvEvents", "workers", batch, timeout)
        return answer


class Admin:
    """Admin calls: policies, a model's admission state and its last decisions (role ``admin`` with auth on)."""

    def __init__(self, router: Router) -> None:
        self._router = router

    def set_policy(self, model: str, policy: str = "", parameters: Mapping[str, object] = {}, *,
                   timeout: Optional[float] = req.UNSET) -> admin_pb2.PolicySet:
        """Switches the model's policy (``kv``, ``least_in_flight``, ``power_of_two``, ``round_robin``,
        ``random``; "" keeps it) and/or sets parameters (a None value resets one to its default)."""
        answer: admin_pb2.PolicySet = self._router._call(
            "SetPolicy", "admin", req.set_policy(model, policy, parameters), timeout)
        return answer

    def get_model_state(self, model: str, *, timeout: Optional[float] = req.UNSET) -> admin_pb2.ModelState:
        """The model's admission state as its admission actor has it: workers and rank loads, live bookings,
        queue, policy, pools per region."""
        answer: admin_pb2.ModelState = self._router._call(
            "GetModelState", "admin", req.model_state_request(model), timeout)
        return answer

    def list_models(self, *, timeout: Optional[float] = req.UNSET) -> list[str]:
        """The models with registered workers."""
        return list(self._router._call("ListModels", "admin", req.LIST_MODELS, timeout).models)

    def explain_recent(self, model: str, limit: int = 0, *,
                       timeout: Optional[float] = req.UNSET) -> explain_pb2.ExplainReply:
        """The model's last decisions with why (this node's Selects and the model's Books), newest first;
        ``limit`` 0: all kept."""
        answer: explain_pb2.ExplainReply = self._router._call(
            "ExplainRecent", "admin", req.explain_request(model, limit), timeout)
        return answer
