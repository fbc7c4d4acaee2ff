"""KafkaConnection.open with TLS and SASL (client.sasl_client) against a fake broker.

``FakeSecureBroker`` is an in-process asyncio server built from protocol/ only: over
TLS (a throwaway PKI from the ``openssl`` CLI, see test_security.make_pki) or plain
TCP, it answers ApiVersions, SaslHandshake and SaslAuthenticate - PLAIN checked with
``protocol.sasl_plain.parse_plain``, SCRAM with ``protocol.scram.ScramServer`` - and,
once authenticated, Metadata. Like Kafka it closes a connection that sends anything
else before authenticating, and one whose authentication failed (after answering).
"""

from __future__ import annotations

import asyncio
import base64
import io
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from client import KafkaAdmin, KafkaConnection, KafkaConnectionError
from client.connection import our_versions
from client.errors import AuthenticationFailed
from client.metadata import metadata_request
from client.security import ClientSecurity
from client.sasl_client import exchange
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.framing import FrameBuffer, size_prefixed
from protocol.headers import decode_request, encode_response
from protocol.sasl_plain import parse_plain
from protocol.scram import ScramError, ScramServer, generic_failure_message, make_credential
from protocol.schema import Struct
from protocol.spec import api
from tests.unit.client.test_security import Pki, pki  # noqa: F401 - the fixture
from tools import ToolError, command_security, console_consumer, topics

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
LIFETIME_MS = 3_600_000
PLAIN_FAILED = "Authentication failed: Invalid username or password"
SERVED = (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, ApiKey.METADATA)


class FakeSecureBroker:
    """One broker on 127.0.0.1 with SASL (and TLS when given a context)."""

    def __init__(self, context: ssl.SSLContext | None, *,
                 mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
                 forge_server_final: bool = False) -> None:
        self.context = context
        self.mechanisms = mechanisms
        self.forge_server_final = forge_server_final
        self.credentials = {(m, u): make_credential(m, p) for u, p in USERS.items()
                            for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}
        self.seen: list[tuple[int, int]] = []          # (api key, version) in arrival order
        self.authenticated: list[str] = []
        self.port = 0
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> FakeSecureBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        state: dict[str, Any] = {"mechanism": None, "scram": None, "user": None}
        frames = FrameBuffer()
        try:
            while data := await reader.read(65536):
                for frame in frames.feed(data):
                    header, req = decode_request(frame)
                    self.seen.append((header.api_key, header.api_version))
                    resp, close = self._answer(header.api_key, req, state)
                    if resp is not None:
                        for chunk in size_prefixed(encode_response(
                                header.api_key, header.api_version, header.correlation_id,
                                resp)):
                            writer.write(bytes(chunk))
                        await writer.drain()
                    if close:
                        return
        except (ConnectionError, OSError, ValueError):   # ValueError: not Kafka framing
            pass
        finally:
            writer.close()

    def _answer(self, key: int, req: Struct, state: dict[str, Any]) -> tuple[Struct | None, bool]:
        """-> (response or None, close the connection afterwards)."""
        if key == ApiKey.API_VERSIONS:
            spec = api(key).response
            return spec.new(api_keys=[
                spec.structs["ApiVersion"].new(api_key=k, min_version=our_versions()[k][0],
                                               max_version=our_versions()[k][1])
                for k in SERVED]), False
        if key == ApiKey.SASL_HANDSHAKE:
            ok = req.mechanism in self.mechanisms
            state["mechanism"] = req.mechanism if ok else None
            return api(key).response.new(
                error_code=ErrorCode.NONE if ok else ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                mechanisms=list(self.mechanisms)), not ok
        if key == ApiKey.SASL_AUTHENTICATE and state["mechanism"] and not state["user"]:
            return self._authenticate(bytes(req.auth_bytes), state)
        if key == ApiKey.METADATA and state["user"]:
            spec = api(key).response
            return spec.new(brokers=[spec.structs["MetadataResponseBroker"].new(
                node_id=1, host="127.0.0.1", port=self.port)], cluster_id="fake-secure",
                controller_id=1, topics=[]), False
        return None, True   # anything else before authenticating: Kafka closes

    def _authenticate(self, token: bytes, state: dict[str, Any]) -> tuple[Struct, bool]:
        mechanism = state["mechanism"]
        spec = api(ApiKey.SASL_AUTHENTICATE).response

        def failed(message: str) -> tuple[Struct, bool]:
            return spec.new(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                            error_message=message), True

        def done(user: str, reply: bytes = b"") -> tuple[Struct, bool]:
            state["user"] = user
            self.authenticated.append(f"{mechanism}:{user}")
            return spec.new(auth_bytes=reply, session_lifetime_ms=LIFETIME_MS), False

        if mechanism == "PLAIN":
            try:
                _authzid, user, password = parse_plain(token)
            except ValueError as e:
                return failed(str(e))
            return done(user) if USERS.get(user) == password else failed(PLAIN_FAILED)
        scram: ScramServer | None = state["scram"]
        try:
            if scram is None:
                scram = state["scram"] = ScramServer(mechanism)
                user = scram.receive_client_first(token)
                return spec.new(auth_bytes=scram.server_first(
                    self.credentials.get((mechanism, user)))), False
            final = scram.server_final(token)
        except ScramError as e:
            return failed(str(e) if e.client_visible else generic_failure_message(mechanism))
        if self.forge_server_final:
            final = b"v=" + base64.b64encode(bytes(64))
        return done(scram.username, final)


def serve(context: ssl.SSLContext | None, fn: Callable[[FakeSecureBroker], Awaitable[Any]],
          **kwargs: Any) -> Any:
    async def main() -> Any:
        broker = await FakeSecureBroker(context, **kwargs).start()
        try:
            return await asyncio.wait_for(fn(broker), 20)
        finally:
            await broker.stop()
    return asyncio.run(main())


def sasl_ssl(pki: Pki, mechanism: str, user: str = "alice", password: str | None = None,
             **extra: str) -> ClientSecurity:
    """Java-style keys for PLAIN, librdkafka-style for SCRAM (both dialects get used)."""
    password = USERS[user] if password is None else password
    if mechanism == "PLAIN":
        props = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                 "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                                     f'required username="{user}" password="{password}";',
                 "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca)}
    else:
        props = {"security.protocol": "SASL_SSL", "sasl.mechanisms": mechanism,
                 "sasl.username": user, "sasl.password": password,
                 "ssl.ca.location": str(pki.ca)}
    props.update(extra)
    return ClientSecurity.from_config(props)


# -- the exchange itself ---------------------------------------------------------------------


def test_exchange_tokens() -> None:
    steps = exchange("PLAIN", "alice", "pw")
    assert next(steps) == b"\x00alice\x00pw"
    with pytest.raises(StopIteration):
        steps.send(b"")
    steps = exchange("SCRAM-SHA-256", "bob", "pw")
    assert next(steps).startswith(b"n,,n=bob,r=")


# -- SASL over TLS -------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_authenticates_over_tls(pki: Pki, mechanism: str) -> None:
    async def body(broker: FakeSecureBroker) -> None:
        conn = await KafkaConnection.open("127.0.0.1", broker.port,
                                          security=sasl_ssl(pki, mechanism), timeout=5)
        async with conn:
            assert conn.session_lifetime_ms == LIFETIME_MS
            assert conn.authenticated_at is not None
            resp = await conn.request(ApiKey.METADATA, metadata_request(
                conn.version_for(ApiKey.METADATA), []))
            assert resp is not None and resp.cluster_id == "fake-secure"
        rounds = 1 if mechanism == "PLAIN" else 2
        assert [k for k, _v in broker.seen] == [ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE,
                                                *[ApiKey.SASL_AUTHENTICATE] * rounds,
                                                ApiKey.METADATA]
        versions = dict(broker.seen)
        assert versions[ApiKey.SASL_HANDSHAKE] == 1
        assert versions[ApiKey.SASL_AUTHENTICATE] == our_versions()[ApiKey.SASL_AUTHENTICATE][1]
        assert broker.authenticated == [f"{mechanism}:alice"]
    serve(pki.server_context(), body)


@pytest.mark.parametrize(("mechanism", "message"), [
    ("PLAIN", PLAIN_FAILED),
    ("SCRAM-SHA-512", generic_failure_message("SCRAM-SHA-512"))])
def test_wrong_password_fails_with_the_brokers_message(pki: Pki, mechanism: str,
                                                       message: str) -> None:
    async def body(broker: FakeSecureBroker) -> None:
        with pytest.raises(AuthenticationFailed) as e:
            await KafkaConnection.open("127.0.0.1", broker.port, timeout=5,
                                       security=sasl_ssl(pki, mechanism, password="nope"))
        assert message in str(e.value)
        assert "SASL_AUTHENTICATION_FAILED" in str(e.value)
        assert e.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert (e.value.host, e.value.port) == ("127.0.0.1", broker.port)
        assert broker.authenticated == []
    serve(pki.server_context(), body)


def test_unknown_scram_user_fails(pki: Pki) -> None:
    async def body(broker: FakeSecureBroker) -> None:
        with pytest.raises(AuthenticationFailed, match="invalid credentials"):
            await KafkaConnection.open("127.0.0.1", broker.port, timeout=5,
                                       security=sasl_ssl(pki, "SCRAM-SHA-256", "mallory", "x"))
    serve(pki.server_context(), body)


def test_mechanism_the_broker_does_not_enable(pki: Pki) -> None:
    async def body(broker: FakeSecureBroker) -> None:
        with pytest.raises(AuthenticationFailed) as e:
            await KafkaConnection.open("127.0.0.1", broker.port, timeout=5,
                                       security=sasl_ssl(pki, "SCRAM-SHA-512"))
        assert "does not enable SASL mechanism SCRAM-SHA-512" in str(e.value)
        assert "its enabled mechanisms: PLAIN" in str(e.value)
        assert e.value.mechanisms == ("PLAIN",)
        assert e.value.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert [k for k, _v in broker.seen] == [ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE]
    serve(pki.server_context(), body, mechanisms=("PLAIN",))


def test_a_forged_server_signature_is_refused(pki: Pki) -> None:
    async def body(broker: FakeSecureBroker) -> None:
        with pytest.raises(AuthenticationFailed, match="Invalid server signature"):
            await KafkaConnection.open("127.0.0.1", broker.port, timeout=5,
                                       security=sasl_ssl(pki, "SCRAM-SHA-512"))
    serve(pki.server_context(), body, forge_server_final=True)


def test_sasl_plaintext() -> None:
    async def body(broker: FakeSecureBroker) -> None:
        sec = ClientSecurity.from_config({"security.protocol": "SASL_PLAINTEXT",
                                          "sasl.mechanism": "SCRAM-SHA-256",
                                          "sasl.username": "bob", "sasl.password": "bob-secret"})
        async with await KafkaConnection.open("127.0.0.1", broker.port, security=sec,
                                              timeout=5) as conn:
            assert conn.session_lifetime_ms == LIFETIME_MS
        assert broker.authenticated == ["SCRAM-SHA-256:bob"]
    serve(None, body)


# -- TLS -------------------------------------------------------------------------------------


def test_host_name_check_failure(pki: Pki) -> None:
    async def body(broker: FakeSecureBroker) -> None:
        with pytest.raises(AuthenticationFailed) as e:
            await KafkaConnection.open("127.0.0.1", broker.port, timeout=5,
                                       security=sasl_ssl(pki, "PLAIN"))
        assert "TLS handshake with 127.0.0.1" in str(e.value)
        assert "certificate was refused" in str(e.value)
        assert "127.0.0.1" in str(e.value) and "mismatch" in str(e.value).lower()
        assert broker.seen == []
        # ssl.endpoint.identification.algorithm= (empty): the chain is still checked,
        # the name is not
        sec = sasl_ssl(pki, "PLAIN", **{"ssl.endpoint.identification.algorithm": ""})
        async with await KafkaConnection.open("127.0.0.1", broker.port, security=sec,
                                              timeout=5):
            pass
        assert broker.authenticated == ["PLAIN:alice"]
    serve(pki.server_context(other=True), body)


def test_untrusted_certificate(pki: Pki) -> None:
    async def body(broker: FakeSecureBroker) -> None:
        sec = ClientSecurity.from_config({"security.protocol": "SSL"})   # system CAs only
        with pytest.raises(AuthenticationFailed, match="certificate was refused"):
            await KafkaConnection.open("127.0.0.1", broker.port, security=sec, timeout=5)
    serve(pki.server_context(), body)


def test_mutual_tls(pki: Pki) -> None:
    async def body(broker: FakeSecureBroker) -> None:
        sec = sasl_ssl(pki, "PLAIN", **{"ssl.keystore.type": "PEM",
                                        "ssl.keystore.location": str(pki.client_keystore)})
        async with await KafkaConnection.open("127.0.0.1", broker.port, security=sec,
                                              timeout=5):
            pass
        # no client certificate: the broker hangs up (with TLS 1.3, after the handshake)
        with pytest.raises(KafkaConnectionError, match="opening a SASL_SSL connection"):
            await KafkaConnection.open("127.0.0.1", broker.port, timeout=5,
                                       security=sasl_ssl(pki, "PLAIN"))
    serve(pki.server_context(require_client_cert=True), body)


def test_tls_client_against_a_plaintext_listener(pki: Pki) -> None:
    async def body(broker: FakeSecureBroker) -> None:
        with pytest.raises(KafkaConnectionError, match="opening a SASL_SSL connection"):
            await KafkaConnection.open("127.0.0.1", broker.port, timeout=2,
                                       security=sasl_ssl(pki, "PLAIN"))
    serve(None, body)


def test_sasl_needs_the_handshake(pki: Pki) -> None:
    with pytest.raises(ValueError, match="needs the ApiVersions handshake"):
        asyncio.run(KafkaConnection.open("127.0.0.1", 1, handshake=False,
                                         security=sasl_ssl(pki, "PLAIN")))


# -- through the pool, KafkaAdmin and a tool ---------------------------------------------------


def test_admin_and_a_tool_over_sasl_ssl(pki: Pki, tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        "    username=\"bob\" password=\"bob-secret\";\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={pki.ca}\n")
    wrong = tmp_path / "wrong.properties"
    wrong.write_text(config.read_text().replace("bob-secret", "guess"))

    async def body(broker: FakeSecureBroker) -> None:
        async with KafkaAdmin(broker.address, timeout=5,
                              security=sasl_ssl(pki, "PLAIN")) as admin:
            cluster = await admin.metadata([])
            assert cluster.controller_id == 1
        args = topics.parse_args(["--bootstrap-server", broker.address,
                                  "--command-config", str(config), "--list"])
        out = io.StringIO()
        assert await topics.execute(args, out) == 0
        args = topics.parse_args(["--bootstrap-server", broker.address,
                                  "--command-config", str(wrong), "--list"])
        with pytest.raises(AuthenticationFailed, match="invalid credentials"):
            await topics.execute(args, out)
        assert broker.authenticated == ["PLAIN:alice", "SCRAM-SHA-512:bob"]
    serve(pki.server_context(), body)


def test_a_tool_reports_a_bad_command_config(pki: Pki, tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SSL\n"
                      "ssl.truststore.type=JKS\n"
                      f"ssl.truststore.location={pki.client_p12}\n")
    out = io.StringIO()   # Kafka's TopicCommand prints its errors on stdout
    status = topics.main(["--bootstrap-server", "127.0.0.1:1", "--command-config", str(config),
                          "--list"], stdout=out, stderr=io.StringIO())
    assert status == 1
    assert f"--command-config {config}: ssl.truststore.type='JKS'" in out.getvalue()


def test_command_line_properties_override_the_command_config(pki: Pki, tmp_path: Path) -> None:
    config = tmp_path / "consumer.properties"
    config.write_text(f"security.protocol=SSL\nssl.ca.location={pki.ca}\ngroup.id=ignored\n")
    args = console_consumer.parse_args(["--bootstrap-server", "h:1", "--topic", "t",
                                        "--consumer.config", str(config)])
    assert command_security(args).protocol == "SSL"
    assert command_security(args, {"security.protocol": "PLAINTEXT"}).protocol == "PLAINTEXT"
    with pytest.raises(ToolError, match=r"--command-config .*: ssl\.enabled\.protocols='SSLv3'"):
        command_security(args, {"ssl.enabled.protocols": "SSLv3"})
    args.command_config = None
    assert command_security(args).protocol == "PLAINTEXT"
