"""Request messages, built and checked before any call.

The client rejects what it can tell is wrong without the router (a wrong type, a number the wire cannot carry,
a required field left empty, ``token_ids`` with ``block_hashes``) with :class:`ValueError` or :class:`TypeError`.
The router's own limits (name lengths, prompt size, counts; root README, "Limits") stay with the router, which
answers them with ``InvalidArgument`` and a reason: one copy of each rule.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Optional, Sequence

from kvrouter.types import Disaggregation, Overrides, Scope, SessionMode, StorageTier, WorkerRole
from kvrouter.v1 import admin_pb2, explain_pb2, router_pb2, workers_pb2

#: the default of a ``timeout`` argument: the router's timeout (None means no deadline)
UNSET: Any = object()

U32 = 1 << 32
U64 = 1 << 64


def text(name: str, value: object, *, required: bool = True) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if required and not value:
        raise ValueError(f"{name} must not be empty")
    return value


def uint(name: str, value: object, bound: int = U32, *, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum or value >= bound:
        raise ValueError(f"{name} must be in [{minimum}, {bound}), got {value}")
    return value


def timeout(value: Optional[float]) -> Optional[float]:
    """A call's timeout in seconds: None (no deadline) or a positive finite number."""
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"timeout must be a number of seconds or None, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {value}")
    return float(value)


def _enum(name: str, value: object, kind: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
    try:
        return int(kind(value))
    except ValueError:
        raise ValueError(f"{name} must be one of {[m.name for m in kind]}, got {value}") from None


def names(name: str, value: object) -> Sequence[str]:
    """A list of ids or taints: a sequence of non-empty str (a bare str would be sent as its characters)."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of str, not a {type(value).__name__}")
    try:
        entries: list[str] = list(value)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"{name} must be a sequence of str, got {type(value).__name__}") from None
    for entry in entries:
        text(f"{name} entry", entry)
    return entries


def _multiplier(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    # as the CLI: NaN, infinities and negatives here; the router's upper bound (1, MALFORMED above) stays the router's
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number, at least 0, got {value}")
    return float(value)


def _repeated(name: str, build: Any) -> Any:
    # protobuf checks each element's type and range in C; its messages are made to name the field
    try:
        return build()
    except (TypeError, ValueError) as e:
        raise type(e)(f"{name}: {e}") from None


def _overrides(value: Optional[Overrides]) -> Optional[router_pb2.Overrides]:
    if value is None:
        return None
    if not isinstance(value, Overrides):
        raise TypeError(f"overrides must be a kvrouter.Overrides, got {type(value).__name__}")
    fields = {}
    for field in ("temperature", "overlap_credit", "prefill_load_scale"):
        v = getattr(value, field)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"overrides.{field} must be a number, got {type(v).__name__}")
            fields[field] = float(v)
    return router_pb2.Overrides(**fields)


def route_request(
    model: str,
    *,
    request_id: str,
    for_book: bool,
    token_ids: Optional[Sequence[int]],
    block_hashes: Optional[Sequence[int]],
    isl_tokens: Optional[int],
    expected_output_tokens: int,
    lora_name: str,
    cache_salt: str,
    pinned_worker: Optional[str],
    pinned_dp_rank: Optional[int],
    allowed_workers: Sequence[str],
    priority: int,
    overrides: Optional[Overrides],
    scope: Scope,
    explain: bool,
    excluded_workers: Sequence[str],
    required_taints: Sequence[str],
    preferred_taints: Sequence[str],
    preferred_taint_multiplier: Optional[float],
    disaggregation: Disaggregation,
    strict_priority: int = 0,
    policy_class: str = "",
    session_id: str = "",
    session_mode: SessionMode = SessionMode.UNSPECIFIED,
) -> router_pb2.RouteRequest:
    """The RouteRequest of a Select or a Book, its arguments checked. Only a Book sends ``strict_priority``,
    ``policy_class``, ``session_id`` and ``session_mode`` (a Select ignores them: its callers leave the defaults)."""
    text("model", model)
    text("request_id", request_id, required=for_book)
    tokens: Sequence[int] = () if token_ids is None else token_ids
    hashes: Sequence[int] = () if block_hashes is None else block_hashes
    has_tokens, has_hashes = len(tokens) > 0, len(hashes) > 0
    if has_tokens and has_hashes:
        raise ValueError("send token_ids or block_hashes, not both")
    if isl_tokens is not None:
        uint("isl_tokens", isl_tokens)
    if has_tokens and isl_tokens and isl_tokens != len(tokens):
        raise ValueError(f"isl_tokens {isl_tokens} disagrees with the {len(tokens)} token_ids")
    if not has_tokens and not isl_tokens:
        raise ValueError("the prompt is empty: pass token_ids, or isl_tokens (with block_hashes or alone)")
    uint("expected_output_tokens", expected_output_tokens)
    text("lora_name", lora_name, required=False)
    text("cache_salt", cache_salt, required=False)
    if pinned_worker is not None:
        text("pinned_worker", pinned_worker)
    if pinned_dp_rank is not None:
        uint("pinned_dp_rank", pinned_dp_rank)
    allowed = names("allowed_workers", allowed_workers)
    excluded = names("excluded_workers", excluded_workers)
    required = names("required_taints", required_taints)
    preferred = names("preferred_taints", preferred_taints)
    if preferred_taint_multiplier is not None:
        _multiplier("preferred_taint_multiplier", preferred_taint_multiplier)
        if not preferred:
            raise ValueError("preferred_taint_multiplier goes with preferred_taints")
    uint("strict_priority", strict_priority)
    text("policy_class", policy_class, required=False)
    text("session_id", session_id, required=False)
    mode = _enum("session_mode", session_mode, SessionMode)
    if mode != SessionMode.UNSPECIFIED and not session_id:
        raise ValueError("session_mode goes with session_id")
    if isinstance(priority, bool) or not isinstance(priority, int) or not -(1 << 31) <= priority < (1 << 31):
        raise ValueError(f"priority must be an int32, got {priority!r}")
    if not isinstance(explain, bool):
        raise TypeError(f"explain must be a bool, got {type(explain).__name__}")
    request = router_pb2.RouteRequest(
        model=model,
        request_id=request_id,
        isl_tokens=isl_tokens or 0,
        expected_output_tokens=expected_output_tokens,
        lora_name=lora_name,
        cache_salt=cache_salt,
        pinned_worker=pinned_worker or "",
        allowed_workers=allowed,
        priority=priority,
        overrides=_overrides(overrides),
        scope=_enum("scope", scope, Scope),  # type: ignore[arg-type]
        explain=explain,
        excluded_workers=excluded,
        strict_priority=strict_priority,
        policy_class=policy_class,
        session_id=session_id,
        session_mode=mode,  # type: ignore[arg-type]
        required_taints=required,
        preferred_taints=preferred,
        disaggregation=_enum("disaggregation", disaggregation, Disaggregation),  # type: ignore[arg-type]
    )
    if pinned_dp_rank is not None:
        request.pinned_dp_rank = pinned_dp_rank
    if preferred_taint_multiplier is not None:
        request.preferred_taint_multiplier = float(preferred_taint_multiplier)
    if has_tokens:
        _repeated("token_ids", lambda: request.token_ids.extend(tokens))
    if has_hashes:
        _repeated("block_hashes", lambda: request.block_hashes.extend(hashes))
    return request


def booking_ref(model: str, request_id: str, attempt: int, region: str = "") -> router_pb2.BookingRef:
    text("model", model)
    text("request_id", request_id)
    uint("attempt", attempt, U64)
    text("region", region, required=False)
    return router_pb2.BookingRef(model=model, request_id=request_id, attempt=attempt, region=region)


def registration(model: str, worker_id: str, *, max_num_batched_tokens: int, total_kv_blocks: int, block_size: int,
                 endpoint: str, dp_start: int, dp_size: int, region: str, role: WorkerRole,
                 taints: Sequence[str] = (), lora_adapters: Sequence[str] = ()) -> workers_pb2.WorkerRegistration:
    text("model", model)
    text("worker_id", worker_id)
    for name, value in (("max_num_batched_tokens", max_num_batched_tokens), ("total_kv_blocks", total_kv_blocks),
                        ("block_size", block_size), ("dp_size", dp_size)):
        uint(name, value, minimum=1)
    uint("dp_start", dp_start)
    text("endpoint", endpoint, required=False)
    text("region", region, required=False)
    return workers_pb2.WorkerRegistration(
        model=model, worker_id=worker_id, dp_start=dp_start, dp_size=dp_size,
        max_num_batched_tokens=max_num_batched_tokens, total_kv_blocks=total_kv_blocks, block_size=block_size,
        endpoint=endpoint, region=region, role=_enum("role", role, WorkerRole),  # type: ignore[arg-type]
        taints=names("taints", taints), lora_adapters=names("lora_adapters", lora_adapters))


def worker_key(model: str, worker_id: str) -> workers_pb2.WorkerKey:
    return workers_pb2.WorkerKey(model=text("model", model), worker_id=text("worker_id", worker_id))


def rank_load(value: object) -> workers_pb2.RankLoadReport:
    """A rank's engine-reported load: a ``RankLoadReport`` message or a mapping of its fields."""
    if isinstance(value, workers_pb2.RankLoadReport):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"a rank load must be a RankLoadReport or a mapping, got {type(value).__name__}")
    unknown = set(value) - {"dp_rank", "active_decode_blocks", "active_prefill_tokens", "waiting_requests"}
    if unknown:
        raise ValueError(f"unknown rank load fields {sorted(unknown)}")
    uint("dp_rank", value.get("dp_rank", 0))
    uint("active_decode_blocks", value.get("active_decode_blocks", 0), U64)
    uint("active_prefill_tokens", value.get("active_prefill_tokens", 0), U64)
    uint("waiting_requests", value.get("waiting_requests", 0))
    return workers_pb2.RankLoadReport(**value)


def load_report(model: str, worker_id: str, ranks: Iterable[object]) -> workers_pb2.LoadReport:
    text("model", model)
    text("worker_id", worker_id)
    reports = [rank_load(r) for r in ranks]
    if not reports:
        raise ValueError("a load report needs at least one rank")
    return workers_pb2.LoadReport(model=model, worker_id=worker_id, ranks=reports)


def kv_event_batch(model: str, worker_id: str, dp_rank: int,
                   events: Sequence[workers_pb2.KvEvent]) -> workers_pb2.KvEventBatch:
    text("model", model)
    text("worker_id", worker_id)
    uint("dp_rank", dp_rank)
    for event in events:
        if not isinstance(event, workers_pb2.KvEvent):
            raise TypeError(f"events must be KvEvent messages, got {type(event).__name__}")
    return workers_pb2.KvEventBatch(model=model, worker_id=worker_id, dp_rank=dp_rank, events=events)


def set_policy(model: str, policy: str, parameters: Mapping[str, object]) -> admin_pb2.SetPolicyRequest:
    text("model", model)
    text("policy", policy, required=False)
    if not isinstance(parameters, Mapping):
        raise TypeError(f"parameters must be a mapping, got {type(parameters).__name__}")
    values: dict[str, str] = {}
    for key, value in parameters.items():
        text("parameter name", key)
        if value is None:
            values[key] = ""  # the router resets an empty parameter to its default
        elif isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise TypeError(f"parameter {key!r} must be a str or number (None resets it), got {type(value).__name__}")
        else:
            values[key] = str(value)
    if not policy and not values:
        raise ValueError("SetPolicy needs a policy or parameters")
    return admin_pb2.SetPolicyRequest(model=model, policy=policy, parameters=values)


def model_state_request(model: str) -> admin_pb2.ModelStateRequest:
    return admin_pb2.ModelStateRequest(model=text("model", model))


def explain_request(model: str, limit: int) -> explain_pb2.ExplainRequest:
    return explain_pb2.ExplainRequest(model=text("model", model), limit=uint("limit", limit))


def storage_tier(value: object) -> int:
    return _enum("tier", value, StorageTier)


LIST_MODELS = admin_pb2.ListModelsRequest()

