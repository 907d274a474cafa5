"""Python client of kvrouter, the cluster router for LLM inference.

::

    from kvrouter import Router

    with Router("127.0.0.1:50051") as router:
        with router.book("org/llama-8b", token_ids=prompt_ids) as booking:
            stream_from(booking.endpoint)      # released on every way out of the block

Sync: :class:`Router` (:mod:`kvrouter.client`); asyncio: :class:`AsyncRouter` (:mod:`kvrouter.aio`). Errors:
:mod:`kvrouter.errors`. Hashing: :mod:`kvrouter.hashing`. An engine's KV events and load:
:mod:`kvrouter.engine`. The generated stubs: :mod:`kvrouter.v1`.
"""

from grpc_health.v1.health_pb2 import HealthCheckResponse

from kvrouter._transport import RetryPolicy, Tls
from kvrouter.aio import AsyncAdmin, AsyncBooking, AsyncKeepAlive, AsyncRouter, AsyncWorkers, PendingBooking
from kvrouter.client import DEFAULT_TIMEOUT, Admin, Booking, KeepAlive, Router, Workers
from kvrouter.engine import (AsyncKvEventPublisher, AsyncLoadReporter, KvEventPublisher, KvEventsSent,
                             LoadReporter)
from kvrouter.errors import (AdmissionTimeout, AlreadyExists, BookingOutcomeUnknown, Cancelled, DeadlineExceeded,
                             DeadlineTooShort, FailedPrecondition, InvalidArgument, KvRouterError, MessageTooLarge,
                             MissingRole, MissingToken, ModelNotInRegion, NoEndpoints, NotFound, Overloaded,
                             PermissionDenied, PinnedWorkerNotAllowed, QueueDeadlineExceeded, QueueLimit, Reason,
                             Recovering, RegionUnreachable, RequiredTaintsUnmet, ResourceExhausted, Unauthenticated,
                             Unavailable, UnknownModel, UnknownToken, UnknownWorker, WorkerConfigConflict)
from kvrouter.types import (BookingState, DecodeSelection, Disaggregation, ModelState, Overrides, Rank, RankLoad,
                            Renewal, Scope, Selection, SessionBinding, SessionMode, SessionOutcome, StorageTier,
                            WorkerEndpoint, WorkerRole)

#: ``Router.health`` answers: the gRPC health service's statuses
SERVING = HealthCheckResponse.SERVING
NOT_SERVING = HealthCheckResponse.NOT_SERVING

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_TIMEOUT", "NOT_SERVING", "SERVING",
    "Admin", "AsyncAdmin", "AsyncBooking", "AsyncKeepAlive", "AsyncKvEventPublisher", "AsyncLoadReporter",
    "AsyncRouter", "AsyncWorkers", "Booking", "KeepAlive", "KvEventPublisher", "KvEventsSent", "LoadReporter",
    "PendingBooking", "RetryPolicy", "Router", "Tls", "Workers",
    "BookingState", "DecodeSelection", "Disaggregation", "ModelState", "Overrides", "Rank", "RankLoad", "Renewal",
    "Scope", "Selection", "SessionBinding", "SessionMode", "SessionOutcome", "StorageTier", "WorkerEndpoint",
    "WorkerRole",
    "AdmissionTimeout", "AlreadyExists", "BookingOutcomeUnknown", "Cancelled", "DeadlineExceeded",
    "DeadlineTooShort", "FailedPrecondition", "InvalidArgument", "KvRouterError", "MessageTooLarge", "MissingRole",
    "MissingToken", "ModelNotInRegion", "NoEndpoints", "NotFound", "Overloaded", "PermissionDenied",
    "PinnedWorkerNotAllowed", "QueueDeadlineExceeded", "QueueLimit", "Reason", "Recovering", "RegionUnreachable",
    "RequiredTaintsUnmet", "ResourceExhausted", "Unauthenticated", "Unavailable", "UnknownModel", "UnknownToken",
    "UnknownWorker", "WorkerConfigConflict",
]
