"""The router's rejections as exceptions.

Every rejection of the router is a gRPC status with a machine-readable reason in the ``kvrouter-reason`` trailer
(root README, "Errors"). :func:`from_rpc_error` turns a failed call into a :class:`KvRouterError` whose class is
chosen by the reason when the client knows it (:class:`UnknownModel`, :class:`NoEndpoints`, :class:`Overloaded`,
...) and by the status code otherwise (:class:`InvalidArgument`, :class:`Unavailable`, ...), so code can catch
either the precise case or the whole family. Each exception carries ``code``, ``reason`` and ``details``.

Arguments the client can tell are wrong before any call (a missing model, a negative count, both ``token_ids`` and
``block_hashes``) raise :class:`ValueError` or :class:`TypeError` instead, and nothing is sent.
"""

from __future__ import annotations

from typing import Any, Optional, cast

import grpc

#: The trailer in which the router puts a rejection's reason.
REASON_TRAILER = "kvrouter-reason"


class Reason:
    """The ``kvrouter-reason`` values the router documents (root README, "Errors", "Limits", "Security")."""

    EMPTY_MODEL = "EMPTY_MODEL"
    EMPTY_WORKER_ID = "EMPTY_WORKER_ID"
    EMPTY_REQUEST_ID = "EMPTY_REQUEST_ID"
    INVALID_SIZE = "INVALID_SIZE"
    INVALID_BLOCK_SIZE = "INVALID_BLOCK_SIZE"
    BLOCK_SIZE_MISMATCH = "BLOCK_SIZE_MISMATCH"
    TOO_MANY_TOKENS = "TOO_MANY_TOKENS"
    TOO_MANY_RANKS = "TOO_MANY_RANKS"
    TOO_MANY_ITEMS = "TOO_MANY_ITEMS"
    FIELD_TOO_LONG = "FIELD_TOO_LONG"
    UNKNOWN_ENUM_VALUE = "UNKNOWN_ENUM_VALUE"
    MALFORMED = "MALFORMED"
    UNKNOWN_POLICY = "UNKNOWN_POLICY"
    INVALID_POLICY_PARAMETER = "INVALID_POLICY_PARAMETER"
    UNKNOWN_MODEL = "UNKNOWN_MODEL"
    UNKNOWN_WORKER = "UNKNOWN_WORKER"
    WORKER_CONFIG_CONFLICT = "WORKER_CONFIG_CONFLICT"
    PINNED_WORKER_NOT_ALLOWED = "PINNED_WORKER_NOT_ALLOWED"
    MODEL_NOT_IN_REGION = "MODEL_NOT_IN_REGION"
    INVALID_TAINT = "INVALID_TAINT"
    REQUIRED_TAINTS_UNMET = "REQUIRED_TAINTS_UNMET"
    NO_AGGREGATED_WORKERS = "NO_AGGREGATED_WORKERS"
    NO_PREFILL_WORKERS = "NO_PREFILL_WORKERS"
    NO_DECODE_WORKERS = "NO_DECODE_WORKERS"
    NO_ENDPOINTS = "NO_ENDPOINTS"
    ALL_WORKERS_OVERLOADED = "ALL_WORKERS_OVERLOADED"
    PINNED_WORKER_OVERLOADED = "PINNED_WORKER_OVERLOADED"
    RECOVERING = "RECOVERING"
    REGION_UNREACHABLE = "REGION_UNREACHABLE"
    QUEUE_LIMIT = "QUEUE_LIMIT"
    MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE"
    QUEUE_DEADLINE_EXCEEDED = "QUEUE_DEADLINE_EXCEEDED"
    ADMISSION_TIMEOUT = "ADMISSION_TIMEOUT"
    DEADLINE_TOO_SHORT = "DEADLINE_TOO_SHORT"
    MISSING_TOKEN = "MISSING_TOKEN"
    UNKNOWN_TOKEN = "UNKNOWN_TOKEN"
    MISSING_ROLE = "MISSING_ROLE"


class KvRouterError(Exception):
    """A call the router (or the transport to it) answered with an error status.

    ``code`` is the gRPC status, ``reason`` the router's ``kvrouter-reason`` (None when the status did not come
    from the router's own checks, e.g. a lost connection), ``details`` the status message, ``retries`` how many
    times the client had sent the call again after a lost transport before this error.
    """

    code: grpc.StatusCode

    def __init__(self, code: grpc.StatusCode, reason: Optional[str], details: str) -> None:
        super().__init__(f"{code.name}{f' {reason}' if reason else ''}: {details}")
        self.code = code
        self.reason = reason
        self.details = details
        self.retries = 0

    def __reduce__(self) -> Any:
        return type(self), (self.code, self.reason, self.details)


# ---- by status code


class InvalidArgument(KvRouterError):
    """The request broke a rule of the contract (the reason names which); nothing changed."""


class NotFound(KvRouterError):
    """An unknown model or worker."""


class AlreadyExists(KvRouterError):
    """A registration that conflicts with the existing one."""


class FailedPrecondition(KvRouterError):
    """The request cannot be served as asked (pinned worker not allowed, model in another region)."""


class Unavailable(KvRouterError):
    """Nothing can take the request now (retryable), or the router could not be reached."""


class ResourceExhausted(KvRouterError):
    """The admission queue is full or the message too large."""


class DeadlineExceeded(KvRouterError):
    """The call's deadline passed; a Book that ends so is undone by the router when it learns of it."""


class Unauthenticated(KvRouterError):
    """Auth is on and the call carried no known token."""


class PermissionDenied(KvRouterError):
    """The call's token lacks the service's role."""


class Cancelled(KvRouterError):
    """The call was cancelled by the server or the transport."""


# ---- by reason


class UnknownModel(NotFound):
    """No worker is registered for the model anywhere (``UNKNOWN_MODEL``)."""


class UnknownWorker(NotFound):
    """The worker (or its dp rank) is not registered for the model (``UNKNOWN_WORKER``)."""


class WorkerConfigConflict(AlreadyExists):
    """The worker is registered with another configuration (``WORKER_CONFIG_CONFLICT``)."""


class PinnedWorkerNotAllowed(FailedPrecondition):
    """``pinned_worker`` is not in ``allowed_workers`` (``PINNED_WORKER_NOT_ALLOWED``)."""


class ModelNotInRegion(FailedPrecondition):
    """The model has workers in other regions only; the message names them (``MODEL_NOT_IN_REGION``)."""


class RequiredTaintsUnmet(FailedPrecondition):
    """No worker the request may use carries every one of its ``required_taints`` (``REQUIRED_TAINTS_UNMET``)."""


class NoEndpoints(Unavailable):
    """No eligible worker for the request (``NO_ENDPOINTS``)."""


class Overloaded(Unavailable):
    """Every eligible rank, or the pinned worker, is above a busy threshold (``ALL_WORKERS_OVERLOADED``,
    ``PINNED_WORKER_OVERLOADED``)."""


class Recovering(Unavailable):
    """The model's admission state recovered and no worker has reported load since (``RECOVERING``; retry)."""


class RegionUnreachable(Unavailable):
    """A region did not answer in time or has no member in the cluster (``REGION_UNREACHABLE``)."""


class BookingOutcomeUnknown(Unavailable):
    """A Book's answer was lost and no replay was answered by the router (each lost too, or the deadline passed):
    the router may hold a booking for ``request_id``. ``cause`` is the last error.

    Raised by the client, not the router. Replaying the Book with the same ``request_id`` returns that booking (or
    books anew); :meth:`kvrouter.Router.reclaim` replays and releases it. Otherwise its lease ends it.
    """

    def __init__(self, request_id: str, cause: KvRouterError) -> None:
        super().__init__(cause.code, cause.reason, f"the answer to Book {request_id!r} was lost and replaying it "
                         f"failed: {cause.details}")
        self.request_id = request_id
        self.cause = cause

    def __reduce__(self) -> Any:
        return type(self), (self.request_id, self.cause)


class QueueLimit(ResourceExhausted):
    """The admission queue holds ``max_pending`` Books (``QUEUE_LIMIT``)."""


class MessageTooLarge(ResourceExhausted):
    """The request message is over the router's limit (``MESSAGE_TOO_LARGE``)."""


class QueueDeadlineExceeded(DeadlineExceeded):
    """The Book waited in the admission queue until its deadline (``QUEUE_DEADLINE_EXCEEDED``); nothing booked."""


class AdmissionTimeout(DeadlineExceeded):
    """The admission actor did not answer before the deadline (``ADMISSION_TIMEOUT``); the Book was undone."""


class DeadlineTooShort(DeadlineExceeded):
    """The Book's deadline left no more than the router's deadline margin (``DEADLINE_TOO_SHORT``); nothing booked."""


class MissingToken(Unauthenticated):
    """The call carried no bearer token (``MISSING_TOKEN``)."""


class UnknownToken(Unauthenticated):
    """The bearer token is none of the router's (``UNKNOWN_TOKEN``)."""


class MissingRole(PermissionDenied):
    """The token lacks the role of the called service (``MISSING_ROLE``)."""


_BY_CODE: dict[grpc.StatusCode, type[KvRouterError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.CANCELLED: Cancelled,
}

_BY_REASON: dict[str, type[KvRouterError]] = {
    Reason.UNKNOWN_MODEL: UnknownModel,
    Reason.UNKNOWN_WORKER: UnknownWorker,
    Reason.WORKER_CONFIG_CONFLICT: WorkerConfigConflict,
    Reason.PINNED_WORKER_NOT_ALLOWED: PinnedWorkerNotAllowed,
    Reason.MODEL_NOT_IN_REGION: ModelNotInRegion,
    Reason.REQUIRED_TAINTS_UNMET: RequiredTaintsUnmet,
    Reason.NO_ENDPOINTS: NoEndpoints,
    Reason.ALL_WORKERS_OVERLOADED: Overloaded,
    Reason.PINNED_WORKER_OVERLOADED: Overloaded,
    Reason.RECOVERING: Recovering,
    Reason.REGION_UNREACHABLE: RegionUnreachable,
    Reason.QUEUE_LIMIT: QueueLimit,
    Reason.MESSAGE_TOO_LARGE: MessageTooLarge,
    Reason.QUEUE_DEADLINE_EXCEEDED: QueueDeadlineExceeded,
    Reason.ADMISSION_TIMEOUT: AdmissionTimeout,
    Reason.DEADLINE_TOO_SHORT: DeadlineTooShort,
    Reason.MISSING_TOKEN: MissingToken,
    Reason.UNKNOWN_TOKEN: UnknownToken,
    Reason.MISSING_ROLE: MissingRole,
}


def error_for(code: grpc.StatusCode, reason: Optional[str], details: str) -> KvRouterError:
    """The exception for a status: the reason's class when it is one of a known family, else the code's class."""
    by_reason = _BY_REASON.get(reason) if reason else None
    if by_reason is not None and _BY_CODE.get(code) in by_reason.__mro__:
        return by_reason(code, reason, details)
    return _BY_CODE.get(code, KvRouterError)(code, reason, details)


def reason_of(trailers: object) -> Optional[str]:
    """The ``kvrouter-reason`` in a call's trailing metadata (sync tuples or grpc.aio Metadata), or None."""
    if not trailers:
        return None
    for key, value in trailers:  # type: ignore[attr-defined]
        if key == REASON_TRAILER:
            return value if isinstance(value, str) else value.decode("ascii", "replace")
    return None


def from_rpc_error(error: grpc.RpcError) -> KvRouterError:
    """The :class:`KvRouterError` for a failed grpcio call (sync ``grpc.RpcError`` or ``grpc.aio.AioRpcError``)."""
    call = cast(Any, error)  # a grpc.Call as well (its type stubs, if any, do not say so)
    code = call.code()
    details = call.details() or ""
    trailers = call.trailing_metadata()
    return error_for(code if isinstance(code, grpc.StatusCode) else grpc.StatusCode.UNKNOWN, reason_of(trailers),
                     details)
