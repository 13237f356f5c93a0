"""TLS with Triton's flags (--grpc-use-ssl, --grpc-server-cert,
--grpc-server-key, --grpc-root-cert, --grpc-use-ssl-mutual) against
tritonclient with ssl=True, using a CA generated for the test; the
"liveness" health service; --grpc-max-connection-age-secs closing idle
and busy connections with a GOAWAY so clients reconnect."""

from __future__ import annotations

import datetime
import ipaddress
import subprocess
import threading
from pathlib import Path

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tritonclient.utils import InferenceServerException

import generate_models as gm
from conftest import server_binary, tiny_config, wait_for
from e2e_util import make_inputs


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo_tls"
    gm.write_model(repo, "m", gm.make_tiny_model(), tiny_config("m"))
    return repo


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(path: Path, key, cert) -> tuple[Path, Path]:
    key_path, cert_path = path.with_suffix(".key"), path.with_suffix(".pem")
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1 and a client certificate."""
    d = tmp_path_factory.mktemp("pki")
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("coalesce test CA"))
          .issuer_name(_name("coalesce test CA")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))

    def leaf(cn: str, server: bool):
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
                critical=False)
        return key, builder.sign(ca_key, hashes.SHA256())

    out = {}
    _, out["ca"] = _write(d / "ca", ca_key, ca)
    out["server_key"], out["server_cert"] = _write(d / "server", *leaf("127.0.0.1", True))
    out["client_key"], out["client_cert"] = _write(d / "client", *leaf("client", False))
    return out


def _infer_ok(client) -> None:
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    result = client.infer("m", make_inputs(x=x), client_timeout=30)
    np.testing.assert_allclose(result.as_numpy("y"), x * 2 + 1, rtol=1e-6)


def test_tls_serves_tritonclient_with_ssl(start_server, repo, pki):
    srv = start_server(repo, "--grpc-use-ssl", "true",
                       "--grpc-server-cert", str(pki["server_cert"]),
                       "--grpc-server-key", str(pki["server_key"]), wait_ready=False)
    assert "(TLS)" in srv.log(), srv.log()
    client = grpcclient.InferenceServerClient(srv.url, ssl=True,
                                              root_certificates=str(pki["ca"]))
    wait_for(client.is_server_ready, 30, 0.05, "readiness over TLS")
    _infer_ok(client)
    client.close()
    plain = grpcclient.InferenceServerClient(srv.url)
    with pytest.raises(InferenceServerException):
        plain.is_server_live(client_timeout=5)
    plain.close()


def test_mutual_tls_requires_a_client_certificate(start_server, repo, pki):
    srv = start_server(repo, "--grpc-use-ssl-mutual", "true",
                       "--grpc-server-cert", str(pki["server_cert"]),
                       "--grpc-server-key", str(pki["server_key"]),
                       "--grpc-root-cert", str(pki["ca"]), wait_ready=False)
    assert "(mutual TLS)" in srv.log(), srv.log()
    client = grpcclient.InferenceServerClient(
        srv.url, ssl=True, root_certificates=str(pki["ca"]),
        private_key=str(pki["client_key"]), certificate_chain=str(pki["client_cert"]))
    wait_for(client.is_server_ready, 30, 0.05, "readiness over mutual TLS")
    _infer_ok(client)
    client.close()
    anonymous = grpcclient.InferenceServerClient(srv.url, ssl=True,
                                                 root_certificates=str(pki["ca"]))
    with pytest.raises(InferenceServerException):
        anonymous.is_server_live(client_timeout=5)
    anonymous.close()


@pytest.mark.parametrize("flags, message", [
    (["--grpc-use-ssl", "true", "--grpc-server-cert", "/nonexistent/cert.pem",
      "--grpc-server-key", "/nonexistent/key.pem"],
     "cannot read --grpc-server-cert '/nonexistent/cert.pem'"),
    (["--grpc-use-ssl", "true"], "--grpc-use-ssl needs --grpc-server-cert and --grpc-server-key"),
])
def test_tls_misconfiguration_stops_the_server_with_the_reason(repo, flags, message):
    proc = subprocess.run([str(server_binary()), "--model-repository", str(repo),
                           "--grpc-address", "127.0.0.1", "--grpc-port", "0",
                           "--allow-http", "false", "--allow-metrics", "false", *flags],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def _health(channel, service: str) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    return stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status


def test_liveness_service_is_serving_next_to_readiness(start_server, repo):
    srv = start_server(repo)
    with grpc.insecure_channel(srv.url) as channel:
        serving = health_pb2.HealthCheckResponse.SERVING
        assert _health(channel, "liveness") == serving
        assert _health(channel, "") == serving
        assert _health(channel, "inference.GRPCInferenceService") == serving


def test_max_connection_age_sends_goaway_and_clients_reconnect(start_server, repo):
    srv = start_server(repo, "--grpc-max-connection-age-secs", "1")
    states = []
    seen = threading.Condition()

    def record(state):
        with seen:
            states.append(state)
            seen.notify_all()

    with grpc.insecure_channel(srv.url) as channel:
        channel.subscribe(record, try_to_connect=True)
        assert _health(channel, "liveness") == health_pb2.HealthCheckResponse.SERVING
        # The server ends the connection after about 1 s (gRPC adds up to
        # 10% jitter); the channel then goes back to IDLE.
        with seen:
            assert seen.wait_for(
                lambda: grpc.ChannelConnectivity.READY in states
                and states[-1] == grpc.ChannelConnectivity.IDLE, timeout=10), states
        # A call after the GOAWAY reconnects transparently.
        assert _health(channel, "liveness") == health_pb2.HealthCheckResponse.SERVING
        channel.unsubscribe(record)
