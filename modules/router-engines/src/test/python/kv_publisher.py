#!/usr/bin/env python3
"""An engine's KV event publisher, independent of kvrouter: the test's counterpart of vLLM's ZmqEventPublisher
(vllm/distributed/kv_events.py) and SGLang's copy of it (python/sglang/srt/disaggregation/kv_events.py).

It declares the engines' msgspec structs as their sources do (array_like / omit_defaults / tag) and publishes as they
do: a PUB socket per DP rank at the endpoint's port + rank sending [topic, seq as 8 bytes big-endian, msgpack
payload], seq from 0, every payload kept in a replay buffer of `--buffer-steps` batches; a ROUTER socket per rank at
the replay port + rank answering [identity, "", start_seq] with [identity, "", seq, payload] for every buffered batch
from start_seq on, then [identity, "", -1 as a signed 8-byte value, ""].

Encodings (--encoding): vllm-array (batch and events positional, as vLLM before events became maps), vllm-mixed
(batch positional, events maps tagged by "type"), vllm-map (batch and events maps), sglang-array (SGLang: events
positional, the batch's third field attn_dp_rank).

It is driven by JSON lines on stdin and answers each with one JSON line on stdout:
  {"op": "batch", "rank": 0, "events": [EVENT...], "live": true}   publish a batch (live false: buffer it only,
                                                                    so the subscriber sees a gap the replay covers)
  {"op": "chain", "rank": 0, "blocks": N, "block_size": 16, "first_token": 7, "first_hash": H, "parent": P,
   "bytes_hashes": false}                                          one BlockStored of N blocks
  {"op": "forget", "rank": 0, "below": S}                           drop buffered batches below seq S
  {"op": "restart"}                                                 the engine restarts: seq back to 0, empty buffers
  {"op": "ignore_replays", "rank": 0, "count": N}                   read the rank's next N replay requests, answer none
  {"op": "raw", "rank": 0, "frames": ["hex", ...]}                  send arbitrary frames (malformed messages)
  {"op": "raw_payload", "rank": 0, "payload_hex": "..."}            a well-framed message, next seq, bad payload
  {"op": "quit"}
EVENT: {"type": "BlockStored" | "BlockRemoved" | "AllBlocksCleared" | any other name, fields by their names};
a hash given as {"hex": "..."} is published as bytes (vLLM's default sha256 digests), an int as an int.
"""
import argparse
import json
import os
import sys
import time
from typing import Any, Optional, Union

import msgspec
import zmq

ExternalBlockHash = Union[bytes, int]


# ---- vLLM before events became maps: everything positional (array_like), tagged by class name
class ArrayBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: Optional[int] = None


class ArrayEvent(msgspec.Struct, array_like=True, omit_defaults=True, gc=False, tag=True):
    pass


class ArrayStored(ArrayEvent, tag="BlockStored"):
    block_hashes: list[ExternalBlockHash]
    parent_block_hash: Optional[ExternalBlockHash]
    token_ids: list[int]
    block_size: int
    lora_id: Optional[int]
    medium: Optional[str]
    lora_name: Optional[str]
    extra_keys: Optional[list[Optional[tuple[Any, ...]]]] = None
    group_idx: Optional[int] = None
    kv_cache_spec_kind: Optional[str] = None
    kv_cache_spec_sliding_window: Optional[int] = None


class ArrayRemoved(ArrayEvent, tag="BlockRemoved"):
    block_hashes: list[ExternalBlockHash]
    medium: Optional[str]
    group_idx: Optional[int] = None


class ArrayCleared(ArrayEvent, tag="AllBlocksCleared"):
    pass


# ---- vLLM now: events are maps tagged by "type"; the batch a map too (vllm-map) or still positional (vllm-mixed)
class MapBatch(msgspec.Struct, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: Optional[int] = None


class MapEvent(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
    pass


class MapStored(MapEvent, tag="BlockStored"):
    block_hashes: list[ExternalBlockHash]
    parent_block_hash: Optional[ExternalBlockHash]
    token_ids: list[int]
    block_size: int
    lora_id: Optional[int]
    medium: Optional[str]
    lora_name: Optional[str]
    extra_keys: Optional[list[Optional[tuple[Any, ...]]]] = None
    group_idx: Optional[int] = None
    kv_cache_spec_kind: Optional[str] = None
    kv_cache_spec_sliding_window: Optional[int] = None


class MapRemoved(MapEvent, tag="BlockRemoved"):
    block_hashes: list[ExternalBlockHash]
    medium: Optional[str]
    group_idx: Optional[int] = None


class MapCleared(MapEvent, tag="AllBlocksCleared"):
    pass


# ---- SGLang: positional, the batch's rank field is attn_dp_rank, no medium / lora_name on its events
class SglangBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    attn_dp_rank: Optional[int] = None


class SglangEvent(msgspec.Struct, array_like=True, omit_defaults=True, gc=False, tag=True):
    pass


class SglangStored(SglangEvent, tag="BlockStored"):
    block_hashes: list[int]
    parent_block_hash: Optional[int]
    token_ids: list[int]
    block_size: int
    lora_id: Optional[int]


class SglangRemoved(SglangEvent, tag="BlockRemoved"):
    block_hashes: list[int]


class SglangCleared(SglangEvent, tag="AllBlocksCleared"):
    pass


ENCODINGS = {
    "vllm-array": (ArrayBatch, ArrayStored, ArrayRemoved, ArrayCleared, "data_parallel_rank", False),
    "vllm-mixed": (ArrayBatch, MapStored, MapRemoved, MapCleared, "data_parallel_rank", True),
    "vllm-map": (MapBatch, MapStored, MapRemoved, MapCleared, "data_parallel_rank", True),
    "sglang-array": (SglangBatch, SglangStored, SglangRemoved, SglangCleared, "attn_dp_rank", False),
}

END_SEQ = (-1).to_bytes(8, "big", signed=True)


def hash_value(value):
    if isinstance(value, dict):
        return bytes.fromhex(value["hex"])
    return value


class Publisher:
    def __init__(self, args):
        self.encoding = ENCODINGS[args.encoding]
        self.topic = args.topic.encode("utf-8")
        self.buffer_steps = args.buffer_steps
        self.dp_size = args.dp_size
        self.context = zmq.Context()
        self.encoder = msgspec.msgpack.Encoder()
        self.pubs, self.replays = [], []
        self.pub_port = self._bind_consecutive(zmq.PUB, self.pubs, args.pub_port)
        self.replay_port = self._bind_consecutive(zmq.ROUTER, self.replays, args.replay_port)
        self.seq = [0] * self.dp_size
        self.buffers = [[] for _ in range(self.dp_size)]
        self.ignored_replays = [0] * self.dp_size

    def _bind_consecutive(self, kind, sockets, base):
        # rank r binds port + r, as vLLM's offset_endpoint_port does: rank 0 on a free port, the others after it
        for _ in range(200):
            bound = []
            try:
                first = self._socket(kind)
                bound.append(first)
                if base:
                    first.bind(f"tcp://127.0.0.1:{base}")
                    port = base
                else:
                    port = first.bind_to_random_port("tcp://127.0.0.1", min_port=20000, max_port=60000 - self.dp_size)
                for r in range(1, self.dp_size):
                    socket = self._socket(kind)
                    bound.append(socket)
                    socket.bind(f"tcp://127.0.0.1:{port + r}")
                sockets.extend(bound)
                return port
            except zmq.ZMQError:
                for socket in bound:
                    socket.close(linger=0)
                if base:
                    raise
        raise RuntimeError("no free consecutive ports")

    def _socket(self, kind):
        socket = self.context.socket(kind)
        socket.setsockopt(zmq.LINGER, 0)
        if kind == zmq.PUB:
            socket.setsockopt(zmq.SNDHWM, 100_000)
        return socket

    def event(self, spec):
        _, stored, removed, cleared, _, is_map = self.encoding
        kind = spec["type"]
        if kind == "BlockStored":
            fields = dict(
                block_hashes=[hash_value(h) for h in spec["block_hashes"]],
                parent_block_hash=hash_value(spec.get("parent_block_hash")),
                token_ids=spec["token_ids"],
                block_size=spec["block_size"],
                lora_id=spec.get("lora_id"),
            )
            if stored is not SglangStored:
                fields.update(medium=spec.get("medium", "GPU"), lora_name=spec.get("lora_name"))
                for optional in ("extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window"):
                    if optional in spec:
                        value = spec[optional]
                        if optional == "extra_keys" and value is not None:
                            value = [None if entry is None else tuple(entry) for entry in value]
                        fields[optional] = value
            return stored(**fields)
        if kind == "BlockRemoved":
            fields = dict(block_hashes=[hash_value(h) for h in spec["block_hashes"]])
            if removed is not SglangRemoved:
                fields["medium"] = spec.get("medium", "GPU")
                if "group_idx" in spec:
                    fields["group_idx"] = spec["group_idx"]
            return removed(**fields)
        if kind == "AllBlocksCleared":
            return cleared()
        # a type this publisher's engine does not have: encoded as a newer engine's event would be
        rest = {k: v for k, v in spec.items() if k != "type"}
        return dict(type=kind, **rest) if is_map else [kind, *rest.values()]

    def publish(self, rank, events, live=True, batch_rank=None, ts=None):
        batch_type, _, _, _, rank_field, _ = self.encoding
        batch = batch_type(ts=time.time() if ts is None else ts, events=events,
                           **{rank_field: rank if batch_rank is None else batch_rank})
        payload = self.encoder.encode(batch)
        seq = self.seq[rank]
        self.seq[rank] += 1
        if live:
            self.pubs[rank].send_multipart((self.topic, seq.to_bytes(8, "big"), payload))
        buffer = self.buffers[rank]
        buffer.append((seq, payload))
        if len(buffer) > self.buffer_steps:
            del buffer[0]
        return seq

    def serve_replay(self, rank):
        frames = self.replays[rank].recv_multipart()
        if len(frames) != 3:
            return
        if self.ignored_replays[rank] > 0:
            self.ignored_replays[rank] -= 1
            return
        client, _, start = frames
        start_seq = int.from_bytes(start, "big")
        for seq, payload in self.buffers[rank]:
            if seq >= start_seq:
                self.replays[rank].send_multipart((client, b"", seq.to_bytes(8, "big"), payload))
        self.replays[rank].send_multipart((client, b"", END_SEQ, b""))

    def command(self, command):
        op = command["op"]
        rank = command.get("rank", 0)
        if op == "batch":
            events = [self.event(e) for e in command["events"]]
            return {"seq": self.publish(rank, events, command.get("live", True), command.get("batch_rank"),
                                        command.get("ts"))}
        if op == "chain":
            n, size = command["blocks"], command["block_size"]
            first_token, first_hash = command.get("first_token", 0), int(command["first_hash"])
            tokens = [(first_token + i) % 50_000 for i in range(n * size)]
            if command.get("bytes_hashes"):
                hashes = [{"hex": (first_hash + i).to_bytes(32, "big").hex()} for i in range(n)]
            else:
                hashes = [first_hash + i for i in range(n)]
            spec = {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": command.get("parent"),
                    "token_ids": tokens, "block_size": size, "medium": command.get("medium", "GPU")}
            return {"seq": self.publish(rank, [self.event(spec)], command.get("live", True))}
        if op == "forget":
            self.buffers[rank] = [(s, p) for s, p in self.buffers[rank] if s >= command["below"]]
            return {}
        if op == "restart":
            self.seq = [0] * self.dp_size
            self.buffers = [[] for _ in range(self.dp_size)]
            return {}
        if op == "ignore_replays":
            self.ignored_replays[rank] = command["count"]
            return {}
        if op == "raw":
            self.pubs[rank].send_multipart([bytes.fromhex(f) for f in command["frames"]])
            return {}
        if op == "raw_payload":
            # a well-framed message under the next seq whose payload is not a batch
            payload = bytes.fromhex(command["payload_hex"])
            seq = self.seq[rank]
            self.seq[rank] += 1
            self.pubs[rank].send_multipart((self.topic, seq.to_bytes(8, "big"), payload))
            self.buffers[rank].append((seq, payload))
            return {"seq": seq}
        raise ValueError(f"unknown op {op}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--encoding", choices=sorted(ENCODINGS), default="vllm-map")
    parser.add_argument("--topic", default="kv-events")
    parser.add_argument("--dp-size", type=int, default=1)
    parser.add_argument("--pub-port", type=int, default=0)
    parser.add_argument("--replay-port", type=int, default=0)
    parser.add_argument("--buffer-steps", type=int, default=10_000)
    args = parser.parse_args()
    publisher = Publisher(args)
    out = sys.stdout
    out.write(json.dumps({"ready": True, "pub_port": publisher.pub_port, "replay_port": publisher.replay_port})
              + "\n")
    out.flush()
    poller = zmq.Poller()
    for socket in publisher.replays:
        poller.register(socket, zmq.POLLIN)
    stdin = sys.stdin.fileno()
    poller.register(stdin, zmq.POLLIN)
    pending = b""
    deadline = time.monotonic() + 600  # bounded: a test never needs it longer
    while time.monotonic() < deadline:
        ready = dict(poller.poll(100))
        for rank, socket in enumerate(publisher.replays):
            if socket in ready:
                publisher.serve_replay(rank)
        if stdin in ready:
            chunk = os.read(stdin, 1 << 20)
            if not chunk:
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if not line.strip():
                    continue
                command = json.loads(line)
                if command["op"] == "quit":
                    return
                try:
                    answer = {"ok": True, **publisher.command(command)}
                except Exception as error:  # the test sees the failure in its answer
                    answer = {"ok": False, "error": repr(error)}
                out.write(json.dumps(answer) + "\n")
                out.flush()


if __name__ == "__main__":
    main()
