"""Channels, credentials and the call loop: the one place the client talks gRPC.

Every call goes through :meth:`Transport.call` (sync) or :meth:`AsyncTransport.call` (asyncio), which sends the
bearer token, applies the call's deadline across retries and maps errors to :mod:`kvrouter.errors`. Every call of
the contract is safe to repeat (Book by its ``request_id``, the booking calls by their attempt, registrations and
KV events by their content and ids), so a call whose transport failed before an answer was read (a status without
a ``kvrouter-reason`` that means the connection or stream was lost) is sent again, a bounded number of times,
within the call's deadline.

Channels are opened by :meth:`Transport.stubs`: one to the configured target, and one per other node a call is sent
to (a model's owner node, which the router names in its answers: ``Selection.owner_endpoint``), cached, with the
same credentials, TLS and options. A call sent to another node (``via``) whose transport fails there is sent again
to the configured target at once, as the next numbered try: the configured target is the fallback.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2_grpc

from kvrouter.errors import KvRouterError, from_rpc_error
from kvrouter.v1 import admin_pb2_grpc, router_pb2_grpc, workers_pb2_grpc

log = logging.getLogger("kvrouter")

# ModelState and ExplainReply of a large model can exceed grpcio's default 4 MiB receive limit.
DEFAULT_OPTIONS: Tuple[Tuple[str, Any], ...] = (("grpc.max_receive_message_length", 64 * 1024 * 1024),)

# Statuses that, without a kvrouter-reason, mean the call's transport failed: the router may have acted on it.
# (CANCELLED reaches the client only from the server or the transport: a caller's own cancel is not an error here.)
_TRANSPORT_LOSS = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL,
                             grpc.StatusCode.CANCELLED})


def is_transport_loss(error: KvRouterError) -> bool:
    """True for a failure the router did not decide (no reason) that may have cut off an answer."""
    return error.reason is None and error.code in _TRANSPORT_LOSS


def book_outcome_unknown(error: KvRouterError) -> bool:
    """True when a failed Book may have left a booking: its transport failed, or it did after a lost attempt and no
    replay got the router's answer (a router's rejection of a replay is authoritative: a live booking would have
    been returned)."""
    return error.reason is None and (error.code in _TRANSPORT_LOSS or error.retries > 0)


def _read(path: Optional[Union[str, Path]]) -> Optional[bytes]:
    return None if path is None else Path(path).read_bytes()


@dataclass(frozen=True)
class Tls:
    """TLS to the router. ``ca_file``: PEM roots to trust (None: the system's); ``cert_file`` and ``key_file``:
    the client's certificate chain and key for mutual TLS; ``server_name``: the name to check in the router's
    certificate when the target's host is not it."""

    ca_file: Optional[Union[str, Path]] = None
    cert_file: Optional[Union[str, Path]] = None
    key_file: Optional[Union[str, Path]] = None
    server_name: Optional[str] = None

    def credentials(self) -> grpc.ChannelCredentials:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("mutual TLS needs both cert_file and key_file")
        return grpc.ssl_channel_credentials(root_certificates=_read(self.ca_file), private_key=_read(self.key_file),
                                            certificate_chain=_read(self.cert_file))


@dataclass(frozen=True)
class RetryPolicy:
    """How a call whose transport failed is sent again: at most ``attempts`` more times, waiting
    ``initial_backoff`` seconds doubled each time up to ``max_backoff``, and never past the call's deadline."""

    attempts: int = 4
    initial_backoff: float = 0.05
    max_backoff: float = 1.0

    def __post_init__(self) -> None:
        if self.attempts < 0 or self.initial_backoff < 0 or self.max_backoff < self.initial_backoff:
            raise ValueError(f"invalid retry policy {self}")

    def backoff(self, retry: int) -> float:
        return min(self.max_backoff, self.initial_backoff * float(2 ** retry))


class Stubs:
    """The generated stubs of one channel."""

    __slots__ = ("router", "workers", "admin", "health")

    def __init__(self, channel: Union[grpc.Channel, grpc.aio.Channel]) -> None:
        # grpcio-tools writes no types for the service stubs
        self.router = router_pb2_grpc.RouterStub(channel)  # type: ignore[no-untyped-call]
        self.workers = workers_pb2_grpc.WorkersStub(channel)  # type: ignore[no-untyped-call]
        self.admin = admin_pb2_grpc.AdminStub(channel)  # type: ignore[no-untyped-call]
        self.health = health_pb2_grpc.HealthStub(channel)


def _metadata(token: Optional[str]) -> Optional[Tuple[Tuple[str, str], ...]]:
    if token is None:
        return None
    if not isinstance(token, str) or not token or any(c.isspace() for c in token):
        raise ValueError("token must be a non-empty string without whitespace")
    return (("authorization", f"Bearer {token}"),)


def _options(tls: Optional[Tls], options: Sequence[Tuple[str, Any]]) -> list[Tuple[str, Any]]:
    merged = dict(DEFAULT_OPTIONS)
    if tls is not None and tls.server_name:
        merged["grpc.ssl_target_name_override"] = tls.server_name
    merged.update(options)
    return list(merged.items())


def _tls(tls: Union[None, bool, Tls]) -> Optional[Tls]:
    if tls is None or tls is False:
        return None
    if tls is True:
        return Tls()
    if isinstance(tls, Tls):
        return tls
    raise TypeError(f"tls must be None, True or a kvrouter.Tls, got {type(tls).__name__}")


#: Picks the multi-callable of a call from a channel's stubs (e.g. ``lambda s: s.router.Book``).
Pick = Callable[[Stubs], Any]


class _Base:
    def __init__(self, target: str, token: Optional[str], tls: Union[None, bool, Tls],
                 options: Sequence[Tuple[str, Any]], retry: RetryPolicy) -> None:
        if not isinstance(target, str) or not target:
            raise ValueError("target must be a non-empty 'host:port'")
        if not isinstance(retry, RetryPolicy):
            raise TypeError("retry must be a kvrouter.RetryPolicy")
        self.target = target
        self.metadata = _metadata(token)
        self.tls = _tls(tls)
        self.options = _options(self.tls, options)
        self.retry = retry
        self._lock = threading.Lock()
        self._channels: Dict[str, Any] = {}
        self._stubs: Dict[str, Stubs] = {}

    def _open(self, target: str) -> Any:
        raise NotImplementedError

    def stubs(self, via: str = "") -> Stubs:
        """The stubs of the channel to ``via`` (a node's ``host:port``; empty: the configured target), opened on
        first use and kept until :meth:`close`."""
        endpoint = via or self.target
        stubs = self._stubs.get(endpoint)
        if stubs is None:
            with self._lock:
                stubs = self._stubs.get(endpoint)
                if stubs is None:
                    channel = self._open(endpoint)
                    self._channels[endpoint] = channel
                    stubs = self._stubs[endpoint] = Stubs(channel)
        return stubs

    def _falls_back(self, error: grpc.RpcError, via: str, deadline: Optional[float], what: str) -> bool:
        """True when a call sent to another node than the target lost its transport there (that node died or is
        unreachable) and time is left: the next try goes to the configured target, at once."""
        if not via or via == self.target:
            return False
        mapped = from_rpc_error(error)
        if not is_transport_loss(mapped) or (deadline is not None and time.monotonic() >= deadline):
            return False
        log.info("kvrouter: %s could not reach %s (%s); sending it to %s", what, via, mapped, self.target)
        return True

    def _retry_or_raise(self, error: grpc.RpcError, retries: int, deadline: Optional[float],
                        what: str) -> Tuple[KvRouterError, float]:
        """The mapped error, raised unless another try is due; then how long to wait before it."""
        mapped = from_rpc_error(error)
        mapped.retries = retries
        if retries >= self.retry.attempts or not is_transport_loss(mapped):
            raise mapped from None
        pause = self.retry.backoff(retries)
        if deadline is not None and time.monotonic() + pause >= deadline:
            raise mapped from None
        log.info("kvrouter: %s lost its transport (%s); sending it again in %.3f s", what, mapped, pause)
        return mapped, pause


def _remaining(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else max(deadline - time.monotonic(), 0.001)


def _numbered(request: Any, retries: int, numbered: bool) -> Any:
    """The request to send as try ``retries``: a numbered request (a Book) carries its retry number, so the router
    lets a replay take over the booking from the calls it superseded."""
    if not numbered or retries == 0:
        return request
    resend = type(request)()
    resend.CopyFrom(request)
    resend.retry = retries
    return resend


class Transport(_Base):
    """A sync channel to one router and the call loop over it."""

    def __init__(self, target: str, token: Optional[str] = None, tls: Union[None, bool, Tls] = None,
                 options: Sequence[Tuple[str, Any]] = (), retry: RetryPolicy = RetryPolicy()) -> None:
        super().__init__(target, token, tls, options, retry)
        self.stubs()  # the configured target's channel, opened at once as before
        #: the channel to the configured target
        self.channel = self._channels[target]

    def _open(self, target: str) -> grpc.Channel:
        if self.tls is None:
            return grpc.insecure_channel(target, options=self.options)
        return grpc.secure_channel(target, self.tls.credentials(), options=self.options)

    def call(self, pick: Pick, request: Any, timeout: Optional[float], what: str, numbered: bool = False,
             via: str = "") -> Tuple[Any, int, str]:
        """Sends ``request`` through the multi-callable ``pick`` takes from the stubs of ``via`` (empty: the
        configured target); returns the answer, how many times it was sent again after a lost transport (each
        resend of a ``numbered`` request carries its number in ``retry``) and the node that answered (``via``, or
        empty once it fell back to the target). Raises :class:`KvRouterError`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        retries = 0
        while True:
            try:
                return pick(self.stubs(via))(_numbered(request, retries, numbered), timeout=_remaining(deadline),
                                             metadata=self.metadata), retries, via
            except grpc.RpcError as e:
                if self._falls_back(e, via, deadline, what):
                    via = ""
                    retries += 1
                    continue
                _, pause = self._retry_or_raise(e, retries, deadline, what)
            time.sleep(pause)
            retries += 1

    def close(self) -> None:
        for channel in list(self._channels.values()):
            channel.close()


class AsyncTransport(_Base):
    """A grpc.aio channel to one router and the call loop over it."""

    def __init__(self, target: str, token: Optional[str] = None, tls: Union[None, bool, Tls] = None,
                 options: Sequence[Tuple[str, Any]] = (), retry: RetryPolicy = RetryPolicy()) -> None:
        super().__init__(target, token, tls, options, retry)
        self.stubs()  # the configured target's channel, opened at once as before
        #: the channel to the configured target
        self.channel = self._channels[target]

    def _open(self, target: str) -> grpc.aio.Channel:
        if self.tls is None:
            return grpc.aio.insecure_channel(target, options=self.options)
        return grpc.aio.secure_channel(target, self.tls.credentials(), options=self.options)

    async def call(self, pick: Pick, request: Any, timeout: Optional[float], what: str, numbered: bool = False,
                   via: str = "") -> Tuple[Any, int, str]:
        """As :meth:`Transport.call`; cancelling the awaiting task cancels the call in flight."""
        deadline = None if timeout is None else time.monotonic() + timeout
        retries = 0
        while True:
            try:
                return await pick(self.stubs(via))(_numbered(request, retries, numbered),
                                                   timeout=_remaining(deadline), metadata=self.metadata), retries, via
            except grpc.aio.AioRpcError as e:
                if self._falls_back(e, via, deadline, what):
                    via = ""
                    retries += 1
                    continue
                _, pause = self._retry_or_raise(e, retries, deadline, what)
            await asyncio.sleep(pause)
            retries += 1

    async def close(self) -> None:
        for channel in list(self._channels.values()):
            await channel.close(grace=None)


class Owners:
    """Where to send each model's regional Books: the node owning its admission actor, as the router's last answer
    named it (``Selection.owner_endpoint``); empty (the configured target) until an answer names one, for a global
    Book (the owner named is that of the region the answer chose, whose choice a node of another region may not
    share), and for :data:`AVOID_SECONDS` after a call could not reach a node (an owner that died is still named
    until its successor's first summary reaches the answering node)."""

    #: how long a node a call could not reach is not sent Books (the router's failover takes seconds)
    AVOID_SECONDS = 5.0

    def __init__(self, target: str) -> None:
        self._target = target
        self._by_model: Dict[str, str] = {}
        self._unreachable: Dict[str, float] = {}

    def via(self, model: str, global_scope: bool) -> str:
        """The node to send a Book of ``model`` to (empty: the configured target)."""
        return "" if global_scope else self._by_model.get(model, "")

    def learned(self, model: str, global_scope: bool, owner: str, sent_via: str, answered_via: str) -> None:
        """Takes note of an answer: the owner it names (``owner``), and whether the call had to fall back from
        ``sent_via`` to the configured target (``answered_via`` empty)."""
        now = time.monotonic()
        if sent_via and not answered_via:
            self._unreachable[sent_via] = now
        if global_scope:
            return
        avoided = self._unreachable.get(owner)
        if avoided is not None and now - avoided >= self.AVOID_SECONDS:
            self._unreachable.pop(owner, None)
            avoided = None
        if not owner or owner == self._target or avoided is not None:
            self._by_model.pop(model, None)
        else:
            self._by_model[model] = owner
