"""kvrouter.hashing against router-core's vectors (block_hash_vectors.tsv, written with Debian's python3-xxhash
for the Java BlockHasher's tests): seeds, local and sequence hashes. The live check (the router finds the blocks
an engine published with these hashes) is in test_engine.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvrouter import hashing
from routers import REPO

VECTORS = REPO / "modules" / "router-core" / "src" / "test" / "resources" / "hashing" / "block_hash_vectors.tsv"


def _cases() -> list:
    lines = [line for line in Path(VECTORS).read_text().splitlines() if line and not line.startswith("#")]
    cases = []
    for line in lines:
        name, block_size, salt, lora, seed, tokens, local, seq = line.split("\t")
        text = lambda h: "" if h == "-" else bytes.fromhex(h).decode("utf-8")  # noqa: E731
        numbers = lambda s, base: [] if s == "-" else [int(v, base) for v in s.split(",")]  # noqa: E731
        cases.append(pytest.param(int(block_size), text(salt), text(lora), int(seed, 16), numbers(tokens, 10),
                                  numbers(local, 16), numbers(seq, 16), id=name))
    return cases


def test_the_vectors_are_there() -> None:
    assert len(_cases()) >= 30


@pytest.mark.parametrize("block_size,salt,lora,seed,tokens,local,seq", _cases())
def test_hashes_match_the_router_vectors(block_size: int, salt: str, lora: str, seed: int, tokens: list,
                                         local: list, seq: list) -> None:
    assert hashing.seed(salt, lora) == seed
    assert hashing.local_block_hashes(tokens, block_size, seed=seed) == local
    assert hashing.sequence_hashes(tokens, block_size, seed=seed) == seq
    assert hashing.sequence_hashes_from_local(local, seed=seed) == seq


def test_sequence_hashes_continue_from_a_parent() -> None:
    tokens = list(range(40))
    whole = hashing.sequence_hashes(tokens, 8)
    tail = hashing.sequence_hashes(tokens[16:], 8, parent=whole[1])
    assert tail == whole[2:]


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError):
        hashing.local_block_hashes([1, 2, 3, 4], 0)
    with pytest.raises(ValueError):
        hashing.local_block_hashes([1, -2, 3, 4], 2)
    with pytest.raises(ValueError):
        hashing.local_block_hashes([1, 1 << 32], 2)
