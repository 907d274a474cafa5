"""Typed values of the contract that the client hands out or takes: enums, a selection, loads, overrides.

The enums have the numbers of the proto enums (``common.proto``, ``router.proto``, ``workers.proto``). A
:class:`Selection` wraps the ``Selection`` message it was read from (``.proto``) and reads its fields on access,
so a Select or Book pays for no copy; so do :class:`DecodeSelection` (a pair's decode half), :class:`BookingState`
and :class:`ModelState` (``Admin.get_model_state``'s answer, typed).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Dict, Generic, List, Optional, TypeVar

from kvrouter.v1 import admin_pb2, explain_pb2, router_pb2


class Scope(enum.IntEnum):
    """Which regions a Select or Book may use (router.proto, Scope)."""

    #: the router treats it as REGION
    UNSPECIFIED = 0
    #: this node's region only (the default)
    REGION = 1
    #: the fresh pool with the lowest load, in any region
    GLOBAL = 2


class WorkerRole(enum.IntEnum):
    """A worker's role (common.proto, WorkerRole); UNSPECIFIED means aggregated prefill and decode."""

    UNSPECIFIED = 0
    AGGREGATED = 1
    PREFILL = 2
    DECODE = 3


class SessionMode(enum.IntEnum):
    """How a Book's session binding holds (router.proto, SessionMode)."""

    #: the model's ``session_mode`` policy parameter (soft unless set)
    UNSPECIFIED = 0
    #: a preference weighed against the cost; a cheaper rank takes the session over (rebound)
    SOFT = 1
    #: the bound rank or nothing (replaced once when it is gone or not eligible)
    HARD = 2


class Disaggregation(enum.IntEnum):
    """How a Select or Book uses the model's prefill and decode workers (router.proto, Disaggregation)."""

    #: a prefill and a decode rank when the model has workers of both roles (the decode rank alone when the policy's
    #: ``conditional_disagg_*`` thresholds find the prompt left uncached on it short), else an aggregated rank; a
    #: model with decode workers only answers a decode rank alone
    AUTO = 0
    #: one aggregated rank (:class:`~kvrouter.errors.FailedPrecondition` ``NO_AGGREGATED_WORKERS`` if the model has
    #: none)
    AGGREGATED = 1
    #: a prefill and a decode rank (:class:`~kvrouter.errors.FailedPrecondition` ``NO_PREFILL_WORKERS`` /
    #: ``NO_DECODE_WORKERS`` if a role is missing)
    DISAGGREGATED = 2


class SessionBinding(str, enum.Enum):
    """What a Book did to its session's binding (router.proto, SessionOutcome.outcome)."""

    #: the session had no binding: it is bound to the booked rank now
    BOUND = "bound"
    #: booked on its bound rank
    KEPT = "kept"
    #: bound to another rank (:attr:`SessionOutcome.previous` is the rank it left)
    REBOUND = "rebound"


class StorageTier(enum.IntEnum):
    """Where a KV event's blocks live (common.proto, StorageTier)."""

    DEVICE = 0
    HOST = 1
    DISK = 2


@dataclass(frozen=True)
class WorkerEndpoint:
    """A routing unit (worker, dp rank) and where to reach it."""

    worker_id: str
    dp_rank: int
    endpoint: str
    region: str


@dataclass(frozen=True)
class Rank:
    """A routing unit: one data-parallel rank of a worker."""

    worker_id: str
    dp_rank: int


@dataclass(frozen=True)
class RankLoad:
    """The booking-driven load of a rank when the pick was made."""

    in_flight: int
    prefill_tokens: int
    decode_blocks: int


@dataclass(frozen=True)
class Overrides:
    """Per-request overrides of the model's policy parameters (None: the model's value)."""

    temperature: Optional[float] = None
    overlap_credit: Optional[float] = None
    prefill_load_scale: Optional[float] = None


@dataclass(frozen=True)
class SessionOutcome:
    """What a Book that named a session did to its binding (``Booking.session``)."""

    session_id: str
    #: the mode the Book ran in (its own, else the model's)
    mode: SessionMode
    binding: SessionBinding
    #: the rank a rebound session left (None unless :attr:`binding` is REBOUND)
    previous: Optional[Rank]

    @classmethod
    def from_proto(cls, proto: router_pb2.SessionOutcome) -> "SessionOutcome":
        previous = Rank(proto.previous_worker_id, proto.previous_dp_rank) if proto.previous_worker_id else None
        return cls(proto.session_id, SessionMode(proto.mode), SessionBinding(proto.outcome), previous)


@dataclass(frozen=True)
class Renewal:
    """A Renew's answer: ``applied`` false when the booking no longer exists (released, expired, freed)."""

    applied: bool
    lease_expires_unix_ms: int


_Picked = TypeVar("_Picked", router_pb2.Selection, router_pb2.DecodeSelection)


class _PickedRank(Generic[_Picked]):
    """What a Selection and its decode half both tell of their rank: the worker, its cache overlap, cost and load."""

    __slots__ = ("proto",)

    proto: _Picked

    def __init__(self, proto: _Picked) -> None:
        #: the protobuf message (``kvrouter.v1.Selection`` or ``kvrouter.v1.DecodeSelection``)
        self.proto = proto

    @property
    def worker(self) -> WorkerEndpoint:
        w = self.proto.worker
        return WorkerEndpoint(w.worker_id, w.dp_rank, w.endpoint, w.region)

    @property
    def worker_id(self) -> str:
        return self.proto.worker.worker_id

    @property
    def dp_rank(self) -> int:
        return self.proto.worker.dp_rank

    @property
    def endpoint(self) -> str:
        """The picked worker's endpoint as registered (where to send the request; empty for a global Select
        answered by another region)."""
        return self.proto.worker.endpoint

    @property
    def overlap_blocks(self) -> int:
        """Leading prompt blocks the picked rank holds in its KV cache."""
        return self.proto.overlap_blocks

    @property
    def cached_tokens(self) -> int:
        return self.proto.cached_tokens

    @property
    def cost(self) -> float:
        return self.proto.cost

    @property
    def load(self) -> RankLoad:
        load = self.proto.load
        return RankLoad(load.in_flight, load.prefill_tokens, load.decode_blocks)


class Selection(_PickedRank[router_pb2.Selection]):
    """A routing decision: the picked worker rank, its cache overlap, cost and load, and the view it read."""

    __slots__ = ()

    def __init__(self, proto: router_pb2.Selection) -> None:
        super().__init__(proto)

    @property
    def view_version(self) -> int:
        return self.proto.view_version

    @property
    def policy(self) -> str:
        return self.proto.policy

    @property
    def region(self) -> str:
        """The picked worker's region, or for a global Select answered by another region, that region."""
        return self.proto.region

    @property
    def router_endpoint(self) -> str:
        """Where the routers of :attr:`region` are reached (global calls only)."""
        return self.proto.router_endpoint

    @property
    def owner_endpoint(self) -> str:
        """Where the node owning the model's admission actor in :attr:`region` is reached (``host:port``; empty
        when the answering node does not know it yet): regional Books go there (``Router(owner_direct=True)``)."""
        return self.proto.owner_endpoint

    @property
    def explanation(self) -> Optional[explain_pb2.Explanation]:
        """Why this pick (only for a Select with ``explain=True``); of a pair, why its prefill half."""
        return self.proto.explanation if self.proto.HasField("explanation") else None

    @property
    def disaggregated(self) -> bool:
        """True when the answer is a prefill/decode pair: :attr:`worker` is the prefill rank, :attr:`decode` the
        decode rank, and one booking covers both."""
        return self.proto.HasField("decode")

    @property
    def decode(self) -> Optional["DecodeSelection"]:
        """The decode half of a prefill/decode pair (None for a single rank: aggregated, or a decode rank doing
        its own prefill)."""
        return DecodeSelection(self.proto.decode) if self.proto.HasField("decode") else None

    @property
    def decode_explanation(self) -> Optional[explain_pb2.Explanation]:
        """Why the decode half (only for a Select with ``explain=True`` that answered a pair)."""
        return self.proto.decode_explanation if self.proto.HasField("decode_explanation") else None

    def __repr__(self) -> str:
        w = self.proto.worker
        decode = ""
        if self.proto.HasField("decode"):
            d = self.proto.decode.worker
            decode = f", decode=({d.worker_id!r}, {d.dp_rank})"
        return (f"Selection(worker_id={w.worker_id!r}, dp_rank={w.dp_rank}, endpoint={w.endpoint!r}, "
                f"overlap_blocks={self.proto.overlap_blocks}, cost={self.proto.cost}, policy={self.proto.policy!r}"
                f"{decode})")


class DecodeSelection(_PickedRank[router_pb2.DecodeSelection]):
    """The decode half of a prefill/decode pair: the decode rank, chosen on load alone (overlap credit 0), the
    prompt blocks it holds cached, its cost and its load (after booking, for a Book)."""

    __slots__ = ()

    def __init__(self, proto: router_pb2.DecodeSelection) -> None:
        super().__init__(proto)

    def __repr__(self) -> str:
        w = self.proto.worker
        return (f"DecodeSelection(worker_id={w.worker_id!r}, dp_rank={w.dp_rank}, endpoint={w.endpoint!r}, "
                f"cost={self.proto.cost})")


class BookingState:
    """A live booking as the model's state reports it (admin.proto, BookingState): for a prefill/decode pair,
    :attr:`rank` is the prefill rank (holding :attr:`prefill_tokens` until prefill is done) and :attr:`decode`
    the decode rank (holding :attr:`decode_blocks`)."""

    __slots__ = ("proto",)

    def __init__(self, proto: admin_pb2.BookingState) -> None:
        #: the ``kvrouter.v1.BookingState`` message
        self.proto = proto

    @property
    def request_id(self) -> str:
        return self.proto.request_id

    @property
    def attempt(self) -> int:
        return self.proto.attempt

    @property
    def rank(self) -> Rank:
        """The booked rank (a pair's prefill rank)."""
        return Rank(self.proto.worker_id, self.proto.dp_rank)

    @property
    def worker_id(self) -> str:
        return self.proto.worker_id

    @property
    def dp_rank(self) -> int:
        return self.proto.dp_rank

    @property
    def disaggregated(self) -> bool:
        return bool(self.proto.decode_worker_id)

    @property
    def decode(self) -> Optional[Rank]:
        """A pair's decode rank (None for a single rank)."""
        return Rank(self.proto.decode_worker_id, self.proto.decode_dp_rank) if self.proto.decode_worker_id else None

    @property
    def prefill_tokens(self) -> int:
        return self.proto.prefill_tokens

    @property
    def decode_blocks(self) -> int:
        return self.proto.decode_blocks

    @property
    def prefill_done(self) -> bool:
        return self.proto.prefill_done

    @property
    def booked_unix_ms(self) -> int:
        return self.proto.booked_unix_ms

    @property
    def lease_expires_unix_ms(self) -> int:
        return self.proto.lease_expires_unix_ms

    def __repr__(self) -> str:
        decode = f", decode=({self.proto.decode_worker_id!r}, {self.proto.decode_dp_rank})" \
            if self.proto.decode_worker_id else ""
        return (f"BookingState(request_id={self.proto.request_id!r}, attempt={self.proto.attempt}, "
                f"worker_id={self.proto.worker_id!r}, dp_rank={self.proto.dp_rank}{decode}, "
                f"prefill_done={self.proto.prefill_done})")


class ModelState:
    """A model's admission state (``Admin.get_model_state``'s answer) with its bookings typed:
    ``ModelState(router.admin.get_model_state(model)).bookings``. The workers, queue and the rest: :attr:`proto`."""

    __slots__ = ("proto",)

    def __init__(self, proto: admin_pb2.ModelState) -> None:
        #: the ``kvrouter.v1.ModelState`` message
        self.proto = proto

    @property
    def model(self) -> str:
        return self.proto.model

    @property
    def policy(self) -> str:
        return self.proto.policy

    @property
    def policy_parameters(self) -> Dict[str, str]:
        return dict(self.proto.policy_parameters)

    @property
    def view_version(self) -> int:
        return self.proto.view_version

    @property
    def block_size(self) -> int:
        return self.proto.block_size

    @property
    def bookings(self) -> List[BookingState]:
        """The live bookings."""
        return [BookingState(b) for b in self.proto.bookings]

    def booking(self, request_id: str) -> Optional[BookingState]:
        """The live booking of ``request_id``, if any."""
        for b in self.proto.bookings:
            if b.request_id == request_id:
                return BookingState(b)
        return None

    def __repr__(self) -> str:
        return (f"ModelState(model={self.proto.model!r}, policy={self.proto.policy!r}, "
                f"view_version={self.proto.view_version}, bookings={len(self.proto.bookings)})")
