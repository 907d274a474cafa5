"""What the client adds to a Book + Release, against the raw grpcio stubs it wraps, side by side in one run.

Each variant books and releases one request at a time on the same node and model (two prompt shapes: isl_tokens
only, and 2,048 token ids), sync (grpc blocking stubs vs kvrouter.Router) and asyncio (grpc.aio stubs vs
kvrouter.AsyncRouter); an asyncio throughput pair keeps 32 Book + Release loops in flight. Rounds alternate the
variants (warm-up round first, not counted). Per variant: the median and p99 wall time of a Book + Release, the
client process's CPU time per pair, and the ratios client / raw. Bounded: ``--pairs`` per variant per round,
``--rounds`` rounds, and a ``--max-seconds`` cap after which no further round starts.

    ../../.venv/bin/python bench/overhead.py            # starts a node (bin/kvrouter) on free ports
    ../../.venv/bin/python bench/overhead.py --target 127.0.0.1:50051

Writes results/overhead.md (with the date and the command).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Awaitable, Callable, Dict, List, Tuple

import grpc
import grpc.aio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import kvrouter  # noqa: E402
from kvrouter.v1 import router_pb2, router_pb2_grpc  # noqa: E402

MODEL = "bench/overhead"
PROMPT_TOKENS = list(range(2048))
CONCURRENCY = 32


class Samples:
    def __init__(self) -> None:
        self.wall: List[float] = []
        self.cpu_per_pair: List[float] = []  # one per round
        self.pairs = 0
        self.elapsed = 0.0

    def add_round(self, wall: List[float], cpu: float, elapsed: float) -> None:
        self.wall.extend(wall)
        self.cpu_per_pair.append(cpu / len(wall))
        self.pairs += len(wall)
        self.elapsed += elapsed

    @property
    def cpu(self) -> float:
        """CPU time per pair, the median over rounds (a round that other processes slowed stays one round)."""
        return statistics.median(self.cpu_per_pair)


def percentile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ---- sync variants


def sync_raw(stub: router_pb2_grpc.RouterStub, tokens: bool) -> Callable[[str], None]:
    def pair(request_id: str) -> None:
        request = router_pb2.RouteRequest(model=MODEL, request_id=request_id)
        if tokens:
            request.token_ids.extend(PROMPT_TOKENS)
        else:
            request.isl_tokens = 512
        booking = stub.Book(request, timeout=10)
        stub.Release(router_pb2.BookingRef(model=MODEL, request_id=booking.request_id, attempt=booking.attempt,
                                           region=booking.region), timeout=10)
    return pair


def sync_client(router: kvrouter.Router, tokens: bool) -> Callable[[str], None]:
    def pair(request_id: str) -> None:
        if tokens:
            with router.book(MODEL, request_id=request_id, token_ids=PROMPT_TOKENS):
                pass
        else:
            with router.book(MODEL, request_id=request_id, isl_tokens=512):
                pass
    return pair


def run_sync(pair: Callable[[str], None], name: str, round_no: int, pairs: int) -> Tuple[List[float], float, float]:
    wall = []
    cpu0, start = time.process_time(), time.perf_counter()
    for i in range(pairs):
        t0 = time.perf_counter()
        pair(f"{name}-{round_no}-{i}")
        wall.append(time.perf_counter() - t0)
    return wall, time.process_time() - cpu0, time.perf_counter() - start


# ---- asyncio variants


def async_raw(stub: router_pb2_grpc.RouterStub, tokens: bool) -> Callable[[str], Awaitable[None]]:
    async def pair(request_id: str) -> None:
        request = router_pb2.RouteRequest(model=MODEL, request_id=request_id)
        if tokens:
            request.token_ids.extend(PROMPT_TOKENS)
        else:
            request.isl_tokens = 512
        booking = await stub.Book(request, timeout=10)
        await stub.Release(router_pb2.BookingRef(model=MODEL, request_id=booking.request_id,
                                                 attempt=booking.attempt, region=booking.region), timeout=10)
    return pair


def async_client(router: kvrouter.AsyncRouter, tokens: bool) -> Callable[[str], Awaitable[None]]:
    async def pair(request_id: str) -> None:
        if tokens:
            async with router.book(MODEL, request_id=request_id, token_ids=PROMPT_TOKENS):
                pass
        else:
            async with router.book(MODEL, request_id=request_id, isl_tokens=512):
                pass
    return pair


async def run_async(pair: Callable[[str], Awaitable[None]], name: str, round_no: int, pairs: int,
                    concurrency: int = 1) -> Tuple[List[float], float, float]:
    wall: List[float] = []
    cpu0, start = time.process_time(), time.perf_counter()
    per_loop = pairs // concurrency

    async def loop(k: int) -> None:
        for i in range(per_loop):
            t0 = time.perf_counter()
            await pair(f"{name}-{round_no}-{k}-{i}")
            wall.append(time.perf_counter() - t0)

    await asyncio.gather(*(loop(k) for k in range(concurrency)))
    return wall, time.process_time() - cpu0, time.perf_counter() - start


# ---- the run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", help="a running router (default: start one with bin/kvrouter)")
    parser.add_argument("--pairs", type=int, default=1000, help="Book + Release pairs per variant per round")
    parser.add_argument("--rounds", type=int, default=7, help="measured rounds (after one warm-up round)")
    parser.add_argument("--max-seconds", type=float, default=240, help="no round starts after this long")
    parser.add_argument("--out", default=str(HERE.parent / "results" / "overhead.md"))
    args = parser.parse_args()
    if args.pairs < CONCURRENCY or args.rounds < 1:
        parser.error(f"--pairs must be at least {CONCURRENCY} and --rounds at least 1")

    node = None
    if args.target is None:
        import routers
        node = routers.start_node("bench-router", Path(tempfile.mkdtemp(prefix="kvrouter-bench-")),
                                  {"KVROUTER_LOG_LEVEL": "WARN"})
        target = node.target
    else:
        target = args.target
    try:
        results, load = measure(target, args.pairs, args.rounds, args.max_seconds)
    finally:
        if node is not None:
            node.stop()
    write_report(Path(args.out), results, load, args)
    print(Path(args.out).read_text())
    return 0


VARIANTS = [  # (table label, kind, shape)
    ("sync, isl_tokens", "sync", False),
    ("sync, 2,048 token ids", "sync", True),
    ("asyncio, isl_tokens", "async", False),
    ("asyncio, 2,048 token ids", "async", True),
    (f"asyncio, isl_tokens, {CONCURRENCY} in flight", "async-concurrent", False),
]


def measure(target: str, pairs: int, rounds: int,
            max_seconds: float) -> Tuple[Dict[Tuple[str, str], Samples], float]:
    setup = kvrouter.Router(target)
    for i in range(4):
        setup.workers.register(MODEL, f"w{i}", max_num_batched_tokens=1 << 20, total_kv_blocks=1 << 20,
                               block_size=16, endpoint=f"http://127.0.0.1:{19000 + i}")
    results: Dict[Tuple[str, str], Samples] = {(label, side): Samples() for label, _, _ in VARIANTS
                                               for side in ("raw", "client")}
    raw_channel = grpc.insecure_channel(target)
    raw_stub = router_pb2_grpc.RouterStub(raw_channel)
    client = kvrouter.Router(target)

    async def async_round(round_no: int, counted: bool) -> None:
        aio_channel = grpc.aio.insecure_channel(target)
        aio_stub = router_pb2_grpc.RouterStub(aio_channel)
        async with kvrouter.AsyncRouter(target) as aclient:
            for label, kind, tokens in VARIANTS:
                if kind == "sync":
                    continue
                concurrency = CONCURRENCY if kind == "async-concurrent" else 1
                sides = [("raw", async_raw(aio_stub, tokens)), ("client", async_client(aclient, tokens))]
                for side, pair in (sides if round_no % 2 else reversed(sides)):
                    wall, cpu, elapsed = await run_async(pair, f"{side}-{label}", round_no, pairs, concurrency)
                    if counted:
                        results[(label, side)].add_round(wall, cpu, elapsed)
        await aio_channel.close()

    start = time.monotonic()
    load_before = os.getloadavg()[0]
    for round_no in range(rounds + 1):  # round 0 warms up
        if round_no > 1 and time.monotonic() - start > max_seconds:
            print(f"stopping after {round_no - 1} rounds: --max-seconds {max_seconds} passed", file=sys.stderr)
            break
        counted = round_no > 0
        # alternate which side goes first, so neither always runs on a warmer router
        for label, kind, tokens in VARIANTS:
            if kind != "sync":
                continue
            sides = [("raw", sync_raw(raw_stub, tokens)), ("client", sync_client(client, tokens))]
            for side, pair in (sides if round_no % 2 else reversed(sides)):
                wall, cpu, elapsed = run_sync(pair, f"{side}-{label}", round_no, pairs)
                if counted:
                    results[(label, side)].add_round(wall, cpu, elapsed)
        asyncio.run(async_round(round_no, counted))
        print(f"round {round_no} done ({time.monotonic() - start:.0f} s)", file=sys.stderr)
    assert not setup.admin.get_model_state(MODEL).bookings, "every booking was released"
    for i in range(4):
        setup.workers.deregister(MODEL, f"w{i}")
    client.close()
    raw_channel.close()
    setup.close()
    return results, load_before


def write_report(out: Path, results: Dict[Tuple[str, str], Samples], load: float,
                 args: argparse.Namespace) -> None:
    rows = []
    for label, kind, _ in VARIANTS:
        raw, client = results[(label, "raw")], results[(label, "client")]
        if not raw.pairs:
            continue
        raw_med, client_med = statistics.median(raw.wall) * 1e6, statistics.median(client.wall) * 1e6
        raw_cpu, client_cpu = raw.cpu * 1e6, client.cpu * 1e6
        if kind == "async-concurrent":
            raw_rate, client_rate = raw.pairs / raw.elapsed, client.pairs / client.elapsed
            extra = f" {raw_rate:,.0f} / {client_rate:,.0f} pairs/s ({client_rate / raw_rate:.2f}×)"
        else:
            extra = ""
        rows.append(
            f"| {label} | {raw_med:,.0f} | {client_med:,.0f} | {client_med / raw_med:.2f} | "
            f"{client_med - raw_med:+,.0f} | {percentile(raw.wall, 0.99) * 1e6:,.0f} / "
            f"{percentile(client.wall, 0.99) * 1e6:,.0f} | {raw_cpu:,.0f} | {client_cpu:,.0f} | "
            f"{client_cpu - raw_cpu:+,.0f} |{extra} |")
    pairs = results[(VARIANTS[0][0], "raw")].pairs

    def added_cpu(label: str) -> float:
        raw, client = results[(label, "raw")], results[(label, "client")]
        return (client.cpu - raw.cpu) * 1e6
    reading = (f"The client adds {added_cpu(VARIANTS[0][0]):.0f} µs (sync) and {added_cpu(VARIANTS[2][0]):.0f} µs "
               f"(asyncio) of Python CPU time to a Book + Release with an isl_tokens prompt (a 2,048-token prompt: "
               f"{added_cpu(VARIANTS[1][0]):.0f} / {added_cpu(VARIANTS[3][0]):.0f} µs); the last row is what that "
               f"costs in throughput when the client process is CPU-bound, on cores it shares with the router.")
    command = "python bench/overhead.py " + " ".join(sys.argv[1:])
    text = f"""# Python client overhead: Book + Release, kvrouter client vs raw grpcio stubs

Date: {datetime.date.today().isoformat()}. Command (in `clients/python`): `{command.strip()}`.
Machine: {os.cpu_count()} cores (load average {load:.1f} when the run started: other builds shared them),
{platform.python_implementation()} {platform.python_version()}, grpcio {grpc.__version__}, kvrouter client
{kvrouter.__version__}; the router on the same host
({'started by the script with bin/kvrouter' if args.target is None else 'at ' + args.target}).

Each row: {pairs:,} Book + Release pairs per side ({args.pairs:,} per round, rounds alternating the sides after a
warm-up round), one pair at a time except the last row. "raw" calls the generated stubs directly (a RouteRequest
built by hand, Book, then Release with the answer's attempt); "client" does `with router.book(...)` /
`async with router.book(...)` and nothing inside (argument checks, the typed Booking, the release on exit).
Wall times in µs (median, and p99 raw / client); CPU is this Python process's CPU time per pair, the median over
rounds (the client's own cost shows there: the router's time is the same for both sides).

| variant | raw median | client median | ratio | added | p99 raw / client | raw CPU | client CPU | added CPU | throughput raw / client |
|---|---|---|---|---|---|---|---|---|---|
""" + "\n".join(rows) + "\n\n" + reading + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
