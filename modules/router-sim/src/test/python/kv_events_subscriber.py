"""A subscriber to an engine's KV events, with vLLM's semantics (examples/online_serving/kv_events_subscriber.py):
SUB on the PUB endpoint for a topic, frames [topic, seq (8 bytes big-endian), msgpack payload]; when a sequence
number skips ahead (or the first one seen is not 0), ask the replay endpoint for the missing batches: a DEALER sends
["", start_seq as 8 bytes big-endian] and reads [seq, payload] frames (vLLM 0.33: [topic, seq, payload]) until the
end marker, seq -1. Runs until "DONE" arrives on stdin, then replays once more from the next sequence number to
catch up, then from START (argument) to check a replay from the middle. Prints one JSON document: every batch in
sequence order, decoded, and what each replay returned.

Usage: kv_events_subscriber.py PUB_ENDPOINT REPLAY_ENDPOINT TOPIC REPLAY_FORMAT(topic|legacy) START
"""
import json
import select
import sys

import msgpack
import zmq

pub, replay_endpoint, topic, replay_format, middle = sys.argv[1:6]
middle = int(middle)
context = zmq.Context()
sub = context.socket(zmq.SUB)
sub.connect(pub)
sub.setsockopt_string(zmq.SUBSCRIBE, topic)
replayer = context.socket(zmq.DEALER)
replayer.connect(replay_endpoint)

batches = {}
replays = []
bad = []


def decode(payload):
    batch = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    return batch


def replay(start):
    replayer.send_multipart([b"", start.to_bytes(8, "big")])
    seqs = []
    while True:
        if not replayer.poll(5000):
            bad.append(f"replay from {start}: no end marker within 5 s")
            break
        frames = replayer.recv_multipart()
        if frames[0] != b"":
            bad.append(f"replay frame without the empty delimiter: {frames[:1]}")
        frames = frames[1:]
        if replay_format == "topic":
            if len(frames) != 3:
                bad.append(f"replay answer of {len(frames)} frames, expected [topic, seq, payload]")
                break
            frame_topic, seq_bytes, payload = frames
        else:
            if len(frames) != 2:
                bad.append(f"replay answer of {len(frames)} frames, expected [seq, payload]")
                break
            frame_topic, (seq_bytes, payload) = None, frames
        seq = int.from_bytes(seq_bytes, "big", signed=True)
        if seq == -1:
            if payload != b"" or (frame_topic is not None and frame_topic != b""):
                bad.append("end marker with a payload or a topic")
            break
        if frame_topic is not None and frame_topic.decode() != topic:
            bad.append(f"replayed topic {frame_topic!r}")
        seqs.append(seq)
        batches[seq] = decode(payload)
    replays.append({"start": start, "seqs": seqs})
    return seqs


last = -1
print("READY", file=sys.stderr, flush=True)
poller = zmq.Poller()
poller.register(sub, zmq.POLLIN)
done = False
while not done:
    for socket, _ in poller.poll(50):
        frame_topic, seq_bytes, payload = sub.recv_multipart()
        if frame_topic.decode() != topic or len(seq_bytes) != 8:
            bad.append(f"published frames {frame_topic!r} {seq_bytes!r}")
        seq = int.from_bytes(seq_bytes, "big")
        if seq > last + 1:
            replay(last + 1)
        batches[seq] = decode(payload)
        last = max(last, seq)
    if select.select([sys.stdin], [], [], 0)[0]:
        line = sys.stdin.readline()
        done = line.strip() == "DONE" or line == ""
caught_up = replay(last + 1)
from_middle = replay(middle)
print(json.dumps({"batches": [[seq, batches[seq]] for seq in sorted(batches)], "replays": replays, "bad": bad}),
      flush=True)
