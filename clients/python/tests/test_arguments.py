"""Bad arguments fail before any call: the clients point at a TCP listener that counts connections (grpcio connects
only when a call is sent), and every bad argument raises ValueError or TypeError with none made."""

from __future__ import annotations

import socket
import threading
from typing import Any, Callable, Iterator

import pytest

import kvrouter
from kvrouter import Overrides


class CountingListener:
    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[CountingListener]:
    counting = CountingListener()
    try:
        yield counting
    finally:
        counting.close()


M = "org/model"
BAD_ROUTER_CALLS: list[tuple[str, Callable[[Any], Any], type]] = [
    ("empty model", lambda r: r.select("", isl_tokens=1), ValueError),
    ("model not a str", lambda r: r.select(7, isl_tokens=1), TypeError),
    ("empty prompt", lambda r: r.select(M), ValueError),
    ("tokens and hashes", lambda r: r.select(M, token_ids=[1, 2], block_hashes=[3]), ValueError),
    ("isl disagrees with tokens", lambda r: r.select(M, token_ids=[1, 2], isl_tokens=3), ValueError),
    ("negative token id", lambda r: r.select(M, token_ids=[1, -2]), ValueError),
    ("token id above u32", lambda r: r.select(M, token_ids=[1 << 32]), ValueError),
    ("token id not an int", lambda r: r.select(M, token_ids=[1, "2"]), TypeError),
    ("block hash above u64", lambda r: r.select(M, block_hashes=[1 << 64], isl_tokens=16), ValueError),
    ("negative isl", lambda r: r.select(M, isl_tokens=-1), ValueError),
    ("isl a float", lambda r: r.select(M, isl_tokens=1.5), TypeError),
    ("allowed workers a str", lambda r: r.select(M, isl_tokens=1, allowed_workers="w1"), TypeError),
    ("empty allowed worker", lambda r: r.select(M, isl_tokens=1, allowed_workers=["w1", ""]), ValueError),
    ("priority above int32", lambda r: r.select(M, isl_tokens=1, priority=1 << 31), ValueError),
    ("unknown scope", lambda r: r.select(M, isl_tokens=1, scope=7), ValueError),
    ("overrides not Overrides", lambda r: r.select(M, isl_tokens=1, overrides={"temperature": 1}), TypeError),
    ("override not a number", lambda r: r.select(M, isl_tokens=1, overrides=Overrides(temperature="hot")), TypeError),
    ("excluded workers a str", lambda r: r.select(M, isl_tokens=1, excluded_workers="w1"), TypeError),
    ("excluded workers not a sequence", lambda r: r.book(M, isl_tokens=1, excluded_workers=3), TypeError),
    ("empty excluded worker", lambda r: r.book(M, isl_tokens=1, excluded_workers=["w1", ""]), ValueError),
    ("required taints a str", lambda r: r.book(M, isl_tokens=1, required_taints="gpu=h100"), TypeError),
    ("required taint not a str", lambda r: r.select(M, isl_tokens=1, required_taints=[7]), TypeError),
    ("preferred taints a str", lambda r: r.select(M, isl_tokens=1, preferred_taints="gpu"), TypeError),
    ("empty preferred taint", lambda r: r.book(M, isl_tokens=1, preferred_taints=[""]), ValueError),
    ("multiplier without taints", lambda r: r.select(M, isl_tokens=1, preferred_taint_multiplier=0.5), ValueError),
    ("negative multiplier", lambda r: r.select(M, isl_tokens=1, preferred_taints=["gpu"],
                                               preferred_taint_multiplier=-0.5), ValueError),
    ("nan multiplier", lambda r: r.book(M, isl_tokens=1, preferred_taints=["gpu"],
                                        preferred_taint_multiplier=float("nan")), ValueError),
    ("infinite multiplier", lambda r: r.book(M, isl_tokens=1, preferred_taints=["gpu"],
                                             preferred_taint_multiplier=float("inf")), ValueError),
    ("multiplier a str", lambda r: r.select(M, isl_tokens=1, preferred_taints=["gpu"],
                                            preferred_taint_multiplier="0.5"), TypeError),
    ("multiplier a bool", lambda r: r.select(M, isl_tokens=1, preferred_taints=["gpu"],
                                             preferred_taint_multiplier=True), TypeError),
    ("unknown disaggregation", lambda r: r.select(M, isl_tokens=1, disaggregation=5), ValueError),
    ("disaggregation a str", lambda r: r.book(M, isl_tokens=1, disaggregation="disaggregated"), TypeError),
    ("negative strict priority", lambda r: r.book(M, isl_tokens=1, strict_priority=-1), ValueError),
    ("strict priority a float", lambda r: r.book(M, isl_tokens=1, strict_priority=1.0), TypeError),
    ("policy class not a str", lambda r: r.book(M, isl_tokens=1, policy_class=3), TypeError),
    ("session id not a str", lambda r: r.book(M, isl_tokens=1, session_id=42), TypeError),
    ("unknown session mode", lambda r: r.book(M, isl_tokens=1, session_id="s", session_mode=3), ValueError),
    ("session mode without session", lambda r: r.book(M, isl_tokens=1, session_mode=kvrouter.SessionMode.HARD),
     ValueError),
    ("zero timeout", lambda r: r.select(M, isl_tokens=1, timeout=0), ValueError),
    ("negative timeout", lambda r: r.select(M, isl_tokens=1, timeout=-1), ValueError),
    ("empty request id", lambda r: r.book(M, request_id="", isl_tokens=1), ValueError),
    ("negative expected output", lambda r: r.book(M, isl_tokens=1, expected_output_tokens=-5), ValueError),
    ("release empty request id", lambda r: r.release(M, "", 1), ValueError),
    ("release negative attempt", lambda r: r.release(M, "r", -1), ValueError),
    ("renew attempt not an int", lambda r: r.renew(M, "r", "1"), TypeError),
    ("mark prefill done no model", lambda r: r.mark_prefill_done("", "r", 1), ValueError),
    ("register zero block size", lambda r: r.workers.register(M, "w", max_num_batched_tokens=1, total_kv_blocks=1,
                                                              block_size=0), ValueError),
    ("register empty worker", lambda r: r.workers.register(M, "", max_num_batched_tokens=1, total_kv_blocks=1,
                                                           block_size=16), ValueError),
    ("register taints a str", lambda r: r.workers.register(M, "w", max_num_batched_tokens=1, total_kv_blocks=1,
                                                           block_size=16, taints="gpu"), TypeError),
    ("register adapters a str", lambda r: r.workers.register(M, "w", max_num_batched_tokens=1, total_kv_blocks=1,
                                                             block_size=16, lora_adapters="sql-lora"), TypeError),
    ("register empty adapter", lambda r: r.workers.register(M, "w", max_num_batched_tokens=1, total_kv_blocks=1,
                                                            block_size=16, lora_adapters=["sql-lora", ""]),
     ValueError),
    ("register unknown role", lambda r: r.workers.register(M, "w", max_num_batched_tokens=1, total_kv_blocks=1,
                                                           block_size=16, role=9), ValueError),
    ("deregister no worker", lambda r: r.workers.deregister(M, ""), ValueError),
    ("load report no ranks", lambda r: r.workers.report_load(M, "w", []), ValueError),
    ("load report unknown field", lambda r: r.workers.report_load(M, "w", [{"dp_rank": 0, "gpu": 1}]), ValueError),
    ("load report negative", lambda r: r.workers.report_load(M, "w", [{"active_decode_blocks": -1}]), ValueError),
    ("kv events not events", lambda r: r.workers.publish_kv_events(M, "w", 0, [{"event_id": 1}]), TypeError),
    ("set policy nothing", lambda r: r.admin.set_policy(M), ValueError),
    ("set policy bad value", lambda r: r.admin.set_policy(M, parameters={"seed": [1]}), TypeError),
    ("state empty model", lambda r: r.admin.get_model_state(""), ValueError),
    ("explain negative limit", lambda r: r.admin.explain_recent(M, -1), ValueError),
]


@pytest.mark.parametrize("name,call,error", BAD_ROUTER_CALLS, ids=[c[0] for c in BAD_ROUTER_CALLS])
def test_sync_bad_argument_fails_before_any_call(listener: CountingListener, name: str, call: Callable[[Any], Any],
                                                 error: type) -> None:
    with kvrouter.Router(listener.target) as router:
        with pytest.raises(error):
            call(router)
    assert listener.connections == 0


@pytest.mark.parametrize("name,call,error", BAD_ROUTER_CALLS, ids=[c[0] for c in BAD_ROUTER_CALLS])
async def test_async_bad_argument_fails_before_any_call(listener: CountingListener, name: str,
                                                        call: Callable[[Any], Any], error: type) -> None:
    async with kvrouter.AsyncRouter(listener.target) as router:
        with pytest.raises(error):
            result = call(router)
            if hasattr(result, "__await__"):
                await result
    assert listener.connections == 0


def test_bad_client_settings_fail_at_construction() -> None:
    with pytest.raises(ValueError):
        kvrouter.Router("")
    with pytest.raises(ValueError):
        kvrouter.Router("127.0.0.1:1", token="two words")
    with pytest.raises(TypeError):
        kvrouter.Router("127.0.0.1:1", tls="yes")
    with pytest.raises(ValueError):
        kvrouter.Router("127.0.0.1:1", timeout=0)
    with pytest.raises(ValueError):
        kvrouter.RetryPolicy(attempts=-1)
    with pytest.raises(ValueError):
        kvrouter.Router("127.0.0.1:1", tls=kvrouter.Tls(cert_file="only-a-cert.pem"))


def test_the_listener_counts_a_call_that_is_sent(listener: CountingListener) -> None:
    # the control for the tests above: a valid call does connect (and fails, the listener speaking no HTTP/2)
    with kvrouter.Router(listener.target, timeout=2.0) as router:
        with pytest.raises(kvrouter.KvRouterError):
            router.select(M, isl_tokens=1)
    assert listener.connections >= 1
