"""The router's block hashing (router-core's ``BlockHasher``; docs/architecture.md, "Block hashing"), with the
``xxhash`` package.

* seed: ``1337``, or when ``cache_salt`` or ``lora_name`` is non-empty, XXH3-64 of
  ``utf8(cache_salt) || 0x00 || utf8(lora_name)`` with seed 1337;
* local hash of a block: XXH3-64 of its token ids as little-endian u32, with that seed;
* sequence hash: ``seq[0] = local[0]``, ``seq[i] = XXH3-64(le64(seq[i-1]) || le64(local[i]))`` with the seed;
* the trailing partial block is never hashed.

A ``RouteRequest`` may carry :func:`local_block_hashes` as ``block_hashes`` instead of its token ids (the router
chains them); a KV ``Stored`` event carries :func:`sequence_hashes` as each block's ``tokens_hash`` (what the
router's index is navigated by).
"""

from __future__ import annotations

import struct
import sys
from array import array
from typing import Iterable, Optional, Sequence

import xxhash

BASE_SEED = 1337

_U32_MAX = 0xFFFFFFFF
_PAIR = struct.Struct("<QQ")


def seed(cache_salt: str = "", lora_name: str = "") -> int:
    """The hash seed of a request: :data:`BASE_SEED` unless a cache salt or LoRA name is set."""
    if not cache_salt and not lora_name:
        return BASE_SEED
    data = (cache_salt or "").encode("utf-8") + b"\x00" + (lora_name or "").encode("utf-8")
    return xxhash.xxh3_64_intdigest(data, seed=BASE_SEED)


def _token_bytes(token_ids: Iterable[int]) -> memoryview:
    tokens = array("I")
    if tokens.itemsize != 4:  # pragma: no cover - every platform CPython runs on has a 4-byte unsigned int
        tokens = array("L")
        if tokens.itemsize != 4:
            raise RuntimeError("no 4-byte unsigned array type on this platform")
    try:
        tokens.extend(token_ids)
    except OverflowError as e:
        raise ValueError(f"token ids must be in [0, {_U32_MAX}]: {e}") from None
    if sys.byteorder != "little":
        tokens.byteswap()
    return memoryview(tokens).cast("B")


def _check_block_size(block_size: int) -> None:
    if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size <= 0:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")


def local_block_hashes(token_ids: Iterable[int], block_size: int, *, seed: int = BASE_SEED) -> list[int]:
    """The local (prefix-independent) hash of every full block of ``token_ids``: a RouteRequest's ``block_hashes``."""
    _check_block_size(block_size)
    data = _token_bytes(token_ids)
    step = 4 * block_size
    blocks = len(data) // step
    digest = xxhash.xxh3_64_intdigest
    return [digest(data[b * step:(b + 1) * step], seed=seed) for b in range(blocks)]


def chain(previous: int, local: int, *, seed: int = BASE_SEED) -> int:
    """One chaining step: the sequence hash of a block whose parent's sequence hash is ``previous``."""
    return xxhash.xxh3_64_intdigest(_PAIR.pack(previous, local), seed=seed)


def sequence_hashes_from_local(local_hashes: Sequence[int], *, seed: int = BASE_SEED,
                               parent: Optional[int] = None) -> list[int]:
    """Chains local hashes into sequence hashes; ``parent`` is the sequence hash of the block before the first."""
    out: list[int] = []
    previous = parent
    for local in local_hashes:
        previous = local if previous is None else chain(previous, local, seed=seed)
        out.append(previous)
    return out


def sequence_hashes(token_ids: Iterable[int], block_size: int, *, seed: int = BASE_SEED,
                    parent: Optional[int] = None) -> list[int]:
    """The sequence hash of every full block of ``token_ids`` (what a KV Stored event's ``tokens_hash`` carries).

    ``parent`` is the sequence hash of the block the tokens follow (None: they start the prompt).
    """
    return sequence_hashes_from_local(local_block_hashes(token_ids, block_size, seed=seed), seed=seed, parent=parent)
