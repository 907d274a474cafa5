"""A TCP proxy between a gRPC client and the router that reads the HTTP/2 frames it forwards, so a test can lose a
Book's answer exactly where it wants: after the router wrote it, before the client read it.

Armed with modes, the proxy acts on the first DATA frame the router sends on a stream (the answer's message) on
any connection as the first mode says, on the next answer as the second, and so on; answers after that pass:

* ``CUT``: drops that frame and closes both sockets at once. The client cannot send a cancel over that
  connection, and the router sees a lost connection, not an RST_STREAM.
* ``HOLD``: withholds that frame and everything the router sends after it on that connection (the trailers and the
  router's PING); what the client sends still passes (its RST_STREAM when it cancels).
* ``HOLD_STREAMS``: withholds that frame and every later frame of a stream, but passes connection frames (stream
  0: the PING), so the client acknowledges the router's PING; :attr:`ping_acked` is set once it has.

With :attr:`blackhole` set, nothing the client sends reaches the router.

:attr:`answer` is the withheld gRPC message (decode it with the answer's type), :attr:`answer_seen` set when it
arrived.
"""

from __future__ import annotations

import enum
import socket
import struct
import threading
from typing import List, Optional

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, PING, RST_STREAM = 0x0, 0x6, 0x3
FLAG_ACK, FLAG_PADDED = 0x1, 0x8


class Mode(enum.Enum):
    PASS = "pass"
    CUT = "cut"
    HOLD = "hold"
    HOLD_STREAMS = "hold_streams"


def _frames(buffer: bytearray) -> List[bytes]:
    """Takes every complete frame off the front of ``buffer``."""
    frames = []
    while len(buffer) >= 9:
        length = int.from_bytes(buffer[0:3], "big")
        if len(buffer) < 9 + length:
            break
        frames.append(bytes(buffer[:9 + length]))
        del buffer[:9 + length]
    return frames


def _header(frame: bytes) -> tuple[int, int, int]:
    return frame[3], frame[4], int.from_bytes(frame[5:9], "big") & 0x7FFFFFFF


def _grpc_message(frame: bytes) -> bytes:
    payload = frame[9:]
    if frame[4] & FLAG_PADDED:
        payload = payload[1:len(payload) - payload[0]]
    # one gRPC length-prefixed message: compressed flag, 4-byte length, the message
    (length,) = struct.unpack(">I", payload[1:5])
    return payload[5:5 + length]


def _abort(sock: socket.socket) -> None:
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


class _Connection:
    def __init__(self, proxy: "Http2Proxy", client: socket.socket, upstream: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.mode = Mode.PASS  # what this connection does since it took the proxy's armed mode
        self.closed = False
        self.lock = threading.Lock()
        for target in (self._client_to_router, self._router_to_client):
            threading.Thread(target=target, daemon=True).start()

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        _abort(self.client)
        _abort(self.upstream)

    def _client_to_router(self) -> None:
        buffer = bytearray()
        preface_left = len(PREFACE)
        try:
            while True:
                data = self.client.recv(65536)
                if not data:
                    break
                if preface_left:
                    skip = min(preface_left, len(data))
                    preface_left -= skip
                    self.upstream.sendall(data[:skip])
                    buffer += data[skip:]
                else:
                    buffer += data
                for frame in _frames(buffer):
                    kind, flags, _ = _header(frame)
                    if kind == PING and flags & FLAG_ACK and self.mode is Mode.HOLD_STREAMS:
                        self.proxy.ping_acked.set()
                    if kind == RST_STREAM:
                        self.proxy.resets_sent += 1
                    if self.proxy.blackhole:
                        self.proxy.dropped += 1
                        continue
                    self.upstream.sendall(frame)
        except OSError:
            pass
        self.close()

    def _router_to_client(self) -> None:
        buffer = bytearray()
        try:
            while True:
                data = self.upstream.recv(65536)
                if not data:
                    break
                buffer += data
                for frame in _frames(buffer):
                    kind, _, stream = _header(frame)
                    if self.mode is Mode.PASS and kind == DATA and stream > 0:
                        self.mode = self.proxy._take_armed()
                        if self.mode is not Mode.PASS:
                            self.proxy.answers += 1
                            self.proxy.answer = _grpc_message(frame)
                            self.proxy.answer_seen.set()
                            if self.mode is Mode.CUT:
                                self.close()
                                return
                            continue
                    if self.mode is Mode.HOLD or (self.mode is Mode.HOLD_STREAMS and stream > 0):
                        continue
                    self.client.sendall(frame)
        except OSError:
            pass
        self.close()


class Http2Proxy:
    """Listens on a free loopback port (:attr:`target`) and forwards to ``127.0.0.1:upstream_port``."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self._armed: List[Mode] = []
        self._lock = threading.Lock()
        self._connections: List[_Connection] = []
        self.answer: Optional[bytes] = None
        #: answers the armed modes acted on
        self.answers = 0
        self.answer_seen = threading.Event()
        self.ping_acked = threading.Event()
        self.resets_sent = 0
        #: while set, frames the client sends are dropped (counted in ``dropped``)
        self.blackhole = False
        self.dropped = 0
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def arm(self, *modes: Mode) -> None:
        """Acts on the next answers as ``modes`` say, one answer each, in order (module docstring)."""
        with self._lock:
            self.answer = None
            self.answer_seen.clear()
            self.ping_acked.clear()
            self.resets_sent = 0
            self._armed = list(modes)

    def _take_armed(self) -> Mode:
        with self._lock:
            return self._armed.pop(0) if self._armed else Mode.PASS

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.accepted += 1
                self._connections.append(_Connection(self, client, upstream))

    def cut_all(self) -> None:
        """Closes every connection made so far (a held one included); the client reconnects on its next call."""
        with self._lock:
            connections, self._connections = list(self._connections), []
        for connection in connections:
            connection.close()

    def close(self) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            connection.close()
