"""Tokens and TLS: a node with auth on (tokens with roles from a file) and mutual TLS on the gRPC port. The client's
``token`` and ``tls`` reach every service, and each refusal maps to its exception. Certificates are made here with
openssl (a CA, the router's certificate for the name kvrouter.test, a client certificate)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterator

import pytest

import kvrouter
import routers

TOKENS = {"tok-all": "router,workers,admin", "tok-router": "router"}


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _certificate(directory: Path, name: str, usage: str, san: str) -> None:
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
             f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=directory)
    (directory / f"{name}.ext").write_text(f"subjectAltName={san}\nextendedKeyUsage={usage}\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext", cwd=directory)
    _openssl("pkcs8", "-topk8", "-nocrypt", "-in", f"{name}.key", "-out", f"{name}.pk8.pem", cwd=directory)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
             "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=kvrouter-test-ca", cwd=directory)
    _certificate(directory, "server", "serverAuth", "DNS:kvrouter.test")
    _certificate(directory, "client", "clientAuth", "DNS:client.kvrouter.test")
    (directory / "tokens").write_text("".join(f"{t} {roles}\n" for t, roles in TOKENS.items()))
    return directory


@pytest.fixture(scope="module")
def secure_node(pki: Path, log_dir: Path) -> Iterator[routers.RouterProcess]:
    started = routers.start_node("secure-router", log_dir, {
        "KVROUTER_AUTH_ENABLED": "on",
        "KVROUTER_AUTH_TOKENS_FILE": str(pki / "tokens"),
        "KVROUTER_GRPC_TLS_ENABLED": "on",
        "KVROUTER_GRPC_TLS_CERT_CHAIN_FILE": str(pki / "server.pem"),
        "KVROUTER_GRPC_TLS_PRIVATE_KEY_FILE": str(pki / "server.pk8.pem"),
        "KVROUTER_GRPC_TLS_CLIENT_CA_FILE": str(pki / "ca.pem"),
    })
    try:
        yield started
    finally:
        started.stop()


def tls(pki: Path, client_cert: bool = True, server_name: str = "kvrouter.test") -> kvrouter.Tls:
    return kvrouter.Tls(ca_file=pki / "ca.pem", cert_file=pki / "client.pem" if client_cert else None,
                        key_file=pki / "client.pk8.pem" if client_cert else None, server_name=server_name)


def test_a_token_with_every_role_over_mutual_tls_reaches_every_service(secure_node: routers.RouterProcess,
                                                                       pki: Path) -> None:
    with kvrouter.Router(secure_node.target, token="tok-all", tls=tls(pki), timeout=10) as router:
        assert router.health() == kvrouter.SERVING
        router.workers.register("secure/model", "w1", max_num_batched_tokens=1024, total_kv_blocks=100,
                                block_size=16)
        with router.book("secure/model", isl_tokens=32) as booking:
            assert booking.selection.worker_id == "w1"
            assert len(router.admin.get_model_state("secure/model").bookings) == 1
        assert router.admin.get_model_state("secure/model").bookings == []


async def test_the_async_client_sends_token_and_certificate(secure_node: routers.RouterProcess, pki: Path) -> None:
    async with kvrouter.AsyncRouter(secure_node.target, token="tok-all", tls=tls(pki), timeout=10) as router:
        await router.workers.register("secure/async", "w1", max_num_batched_tokens=1024, total_kv_blocks=100,
                                      block_size=16)
        async with router.book("secure/async", isl_tokens=32):
            assert len((await router.admin.get_model_state("secure/async")).bookings) == 1
        with pytest.raises(kvrouter.MissingToken):
            async with kvrouter.AsyncRouter(secure_node.target, tls=tls(pki), timeout=10) as anonymous:
                await anonymous.select("secure/async", isl_tokens=8)


def test_refused_tokens_map_to_their_exceptions(secure_node: routers.RouterProcess, pki: Path) -> None:
    with kvrouter.Router(secure_node.target, tls=tls(pki), timeout=10) as anonymous:
        with pytest.raises(kvrouter.MissingToken) as raised:
            anonymous.select("secure/model", isl_tokens=8)
        assert raised.value.reason == "MISSING_TOKEN"
        assert anonymous.health() == kvrouter.SERVING  # health stays open
    with kvrouter.Router(secure_node.target, token="not-a-token", tls=tls(pki), timeout=10) as stranger:
        with pytest.raises(kvrouter.UnknownToken):
            stranger.book("secure/model", isl_tokens=8)
    with kvrouter.Router(secure_node.target, token="tok-router", tls=tls(pki), timeout=10) as router_only:
        with pytest.raises(kvrouter.MissingRole) as raised:
            router_only.admin.list_models()
        assert raised.value.code.name == "PERMISSION_DENIED"
        with pytest.raises(kvrouter.MissingRole):
            router_only.workers.register("secure/model", "w2", max_num_batched_tokens=1, total_kv_blocks=1,
                                         block_size=16)


def test_a_client_the_handshake_refuses_is_unavailable(secure_node: routers.RouterProcess, pki: Path) -> None:
    for settings in (None, tls(pki, client_cert=False), tls(pki, server_name="other.test")):
        with kvrouter.Router(secure_node.target, token="tok-all", tls=settings, timeout=3) as refused:
            with pytest.raises(kvrouter.Unavailable) as raised:
                refused.admin.list_models()
            assert raised.value.reason is None
