"""Typed values of the contract that the client hands out or takes: enums, a selection, loads, overrides.

The enums have the numbers of the proto enums (``common.proto``, ``router.proto``, ``workers.proto``). A
:class:`Selection` wraps the ``Selection`` message it was read from (``.proto``) and reads its fields on access,
so a Select or Book pays for no copy.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional

from kvrouter.v1 import explain_pb2, router_pb2


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
class Renewal:
    """A Renew's answer: ``applied`` false when the booking no longer exists (released, expired, freed)."""

    applied: bool
    lease_expires_unix_ms: int


class Selection:
    """A routing decision: the picked worker rank, its cache overlap, cost and load, and the view it read."""

    __slots__ = ("proto",)

    def __init__(self, proto: router_pb2.Selection) -> None:
        #: the ``kvrouter.v1.Selection`` message
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
        """The picked worker's endpoint as registered (empty for a global Select answered by another region)."""
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
        """Why this pick (only for a Select with ``explain=True``)."""
        return self.proto.explanation if self.proto.HasField("explanation") else None

    def __repr__(self) -> str:
        w = self.proto.worker
        return (f"Selection(worker_id={w.worker_id!r}, dp_rank={w.dp_rank}, endpoint={w.endpoint!r}, "
                f"overlap_blocks={self.proto.overlap_blocks}, cost={self.proto.cost}, policy={self.proto.policy!r})")
