"""Promise 6, optional TLS: ``rami-server --tls-cert/--tls-key``, ``--tls/--ca`` on the clients.

A self-signed certificate for 127.0.0.1 is made in the test (``openssl``, or the
``cryptography`` package). The real server speaks TLS only: a plaintext client and a client
that does not trust the certificate are both turned away; a whole game is played over TLS by
two ``rami-bot connect --tls --ca`` processes, another by the bot kit in this process, and
``rami-client connect --ca`` reaches the server and lists its tables.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from client_harness import Driver
from server_support import RPC_TIMEOUT, VARIANTS, rami_server
from typer.testing import CliRunner

from rami.client import cli
from rami.client.botkit import play, policy_decider
from rami.client.look import Look
from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc

T = RPC_TIMEOUT
BOT = Path(sys.executable).with_name("rami-bot")


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate (and its key) for 127.0.0.1 and localhost, in PEM."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    if shutil.which("openssl"):
        subprocess.run(
            [
                "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out", str(cert),
                "-days", "2", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )  # fmt: skip
        return cert, key
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        pytest.skip("neither openssl nor the cryptography package is here to make a certificate")
    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(private, hashes.SHA256())
    )
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert, key


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The real rami-server with TLS; yields its address and the certificate to trust."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = make_certificate(folder)
    args = ["--tls-cert", str(cert), "--tls-key", str(key)]
    with rami_server(folder / "rami.db", folder / "server.log", args=args) as (_proc, address):
        yield address, cert


def new_table(stub: Any, variant: str, **options: int) -> str:
    created = stub.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name=f"{variant} over TLS",
            variant=VARIANTS[variant],
            options=game_pb2.Options(players=2, **options),
        ),
        timeout=T,
    )
    return str(created.table.table_id)


def test_only_a_client_that_trusts_the_certificate_gets_in(tls_server: tuple[str, Path]) -> None:
    address, cert = tls_server
    request = lobby_service_pb2.ListTablesRequest()
    for channel in (
        grpc.insecure_channel(address),
        grpc.secure_channel(address, grpc.ssl_channel_credentials()),  # the system's roots
    ):
        with channel, pytest.raises(grpc.RpcError) as info:
            lobby_service_pb2_grpc.LobbyServiceStub(channel).ListTables(request, timeout=5)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    credentials = grpc.ssl_channel_credentials(cert.read_bytes())
    with grpc.secure_channel(address, credentials) as channel:
        lobby_service_pb2_grpc.LobbyServiceStub(channel).ListTables(request, timeout=T)


def test_a_client_told_apart_a_tls_server_it_cannot_speak_to_from_no_server(
    tls_server: tuple[str, Path],
) -> None:
    """rami-client said "no Rami server answers" to a TLS server both without --tls and with
    a certificate it does not trust: it now says which, and what to give."""
    from rami.client.link import Link, Unreachable

    address, _ = tls_server

    async def said(credentials: Any) -> str:
        link = Link(address, credentials)
        try:
            with pytest.raises(Unreachable) as info:
                await link.check()
            return str(info.value)
        finally:
            await link.close()

    plain = asyncio.run(said(None))
    assert "one that speaks TLS needs --tls" in plain, plain
    untrusted = asyncio.run(said(grpc.ssl_channel_credentials()))  # the system's roots
    assert f"the server at {address} speaks TLS with a certificate" in untrusted, untrusted
    assert "self signed certificate" in untrusted and "--ca FILE" in untrusted, untrusted
    # rami-bot, given --tls but not the CA, no longer says "one that speaks TLS needs --tls".
    bot = subprocess.run(
        [str(BOT), "connect", address, "--table", "t", "--tls", "--timeout", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    last = bot.stderr.strip().splitlines()[-1]
    assert bot.returncode == 1 and "a certificate --ca trusts" in last, bot.stderr


def test_a_whole_game_over_tls_with_rami_bot(tls_server: tuple[str, Path]) -> None:
    address, cert = tls_server
    with grpc.secure_channel(address, grpc.ssl_channel_credentials(cert.read_bytes())) as ch:
        table_id = new_table(lobby_service_pb2_grpc.LobbyServiceStub(ch), "portuguese", rounds=1)
    flags = ["--tls", "--ca", str(cert)]
    bots = [
        subprocess.Popen(
            [
                str(BOT), "connect", address, "--table", table_id, "--policy", "greedy",
                "--seat", str(seat), "--timeout", "60", *(flags if seat == 0 else flags[1:]),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seat in (0, 1)
    ]  # fmt: skip
    for bot in bots:
        out, err = bot.communicate(timeout=90)
        assert bot.returncode == 0, err
        assert "game over after 1 rounds" in out, out


def test_a_whole_game_over_tls_with_the_bot_kit(tls_server: tuple[str, Path]) -> None:
    address, cert = tls_server
    credentials = grpc.ssl_channel_credentials(cert.read_bytes())
    with grpc.secure_channel(address, credentials) as ch:
        # Two rounds: each seat deals once, so each plays even if a dealer goes out at once.
        table_id = new_table(lobby_service_pb2_grpc.LobbyServiceStub(ch), "tallage", round_cap=2)

    async def both() -> list[Any]:
        return await asyncio.gather(
            *(
                play(
                    address,
                    table_id,
                    policy_decider("greedy", seat),
                    seat=seat,
                    credentials=credentials,
                )
                for seat in (0, 1)
            )
        )

    results = asyncio.run(asyncio.wait_for(both(), 60))
    for r in results:
        assert r.final is not None and r.final.phase == game_pb2.PHASE_GAME_OVER
        assert r.actions > 0 and not r.refused


def test_rami_client_connects_with_tls_and_a_ca(
    tls_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    address, cert = tls_server
    seen: list[tuple[str, Any]] = []

    async def connect(
        target: str, name: str, look: Look, credentials: Any, seats: Any = None
    ) -> None:
        seen.append((target, credentials))

    monkeypatch.setattr(cli, "_connect", connect)
    runner = CliRunner()
    for flags in (["--tls", "--ca", str(cert)], ["--ca", str(cert)], ["--ca-cert", str(cert)]):
        result = runner.invoke(cli.app, ["connect", address, *flags])
        assert result.exit_code == 0, result.output
    missing = runner.invoke(cli.app, ["connect", address, "--ca", str(cert) + ".missing"])
    assert missing.exit_code == 2
    monkeypatch.undo()
    assert [t for t, _ in seen] == [address] * 3
    # The credentials the command line made take the real client to the TLS server.
    credentials = seen[0][1]
    assert credentials is not None
    with grpc.secure_channel(address, credentials) as ch:
        new_table(lobby_service_pb2_grpc.LobbyServiceStub(ch), "simple")
    look = Look(color=False, ascii=True)
    driver = Driver(lambda: cli._connect(address, "Ana", look, credentials)).start()
    try:
        driver.expect(rf"Connected to {address}")
        driver.expect(r"simple over TLS")  # the server's tables, listed
    finally:
        driver.close()


def test_a_plaintext_caller_leaves_no_grpc_line_in_the_servers_log(tmp_path: Path) -> None:
    """gRPC's own log (from INFO up by default) wrote a line for every plaintext connection to
    a TLS port, whatever --log-level said: the server now defaults GRPC_VERBOSITY to ERROR,
    as the clients do."""
    import os
    import time

    from server_support import LISTENING, SERVER

    cert, key = make_certificate(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"}
    log = tmp_path / "server.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [str(SERVER), "--port", "0", "--db", str(tmp_path / "r.db"), "--log-level", "error",
             "--tls-cert", str(cert), "--tls-key", str(key)],
            stdout=subprocess.PIPE, stderr=err, text=True, env=env, start_new_session=True,
        )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert LISTENING in line, log.read_text()
        address = line.split(LISTENING, 1)[1].split()[0]
        request = lobby_service_pb2.ListTablesRequest()
        for _ in range(3):
            with grpc.insecure_channel(address) as channel, pytest.raises(grpc.RpcError):
                lobby_service_pb2_grpc.LobbyServiceStub(channel).ListTables(request, timeout=3)
        time.sleep(0.5)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    said = log.read_text()
    assert "Handshake failed" not in said and "ssl_transport_security" not in said, said


def test_a_certificate_and_key_given_the_wrong_way_round_are_said_so(tmp_path: Path) -> None:
    # gRPC refused them at listening: "could not listen on ... (is another server listening
    # there?)", which sent the operator looking for another server.
    from server_support import SERVER

    cert, key = make_certificate(tmp_path)
    done = subprocess.run(
        [str(SERVER), "--port", "0", "--db", ":memory:", "--tls-cert", str(key),
         "--tls-key", str(cert)],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"--tls-key {cert} holds no PEM private key" in done.stderr, done.stderr
