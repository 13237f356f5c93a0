"""The KServe v2 REST frontend (issue 29) with real clients: tritonclient.http
(every datatype in binary and in JSON, classification, compression, system
and CUDA shared memory, sequences, repository load and unload, statistics),
curl for health and inference, and raw HTTP for what a client library would
never send: malformed JSON, binary sizes that do not add up, a header or a
Content-Length that lies, a body over --http-max-input-size, a restricted API
without its header. Each answer is checked against the gRPC frontend of the
same server or against onnxruntime."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

import generate_models as gm
from conftest import REPO_ROOT, tiny_config
from test_datatypes import TYPES, WIDTH, _identity_config, _identity_model, _values

sys.path.insert(0, str(REPO_ROOT / "examples"))
import generate_triton_quickstart as quickstart  # noqa: E402


def _http_input(name, array, datatype, binary=True):
    inp = httpclient.InferInput(name, list(array.shape), datatype)
    inp.set_data_from_numpy(array, binary_data=binary)
    return inp


def _request(srv, method, path, body=b"", headers=None):
    """One raw HTTP request; (status, headers, body)."""
    host, port = srv.http_url.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def _error(body: bytes) -> str:
    return json.loads(body)["error"]


# --------------------------------------------------------------------------
# health, metadata, curl
# --------------------------------------------------------------------------

def test_health_metadata_and_config_match_grpc(server, client):
    h = server.http_client()
    assert h.is_server_live() and h.is_server_ready()
    assert h.is_model_ready("mlp_classifier") and not h.is_model_ready("nope")
    meta = h.get_model_metadata("mlp_classifier")
    g = client.get_model_metadata("mlp_classifier", as_json=True)
    assert meta["inputs"][0]["shape"] == [-1, 1024]  # numbers, not strings
    assert [int(d) for d in g["inputs"][0]["shape"]] == meta["inputs"][0]["shape"]
    assert meta["versions"] == ["1"] and meta["platform"] == g["platform"]
    config = h.get_model_config("mlp_classifier")
    assert config["max_batch_size"] == client.get_model_config("mlp_classifier").config.max_batch_size
    assert config["input"][0]["dims"] == [1024]
    server_meta = h.get_server_metadata()
    assert server_meta["name"] == client.get_server_metadata().name
    assert "binary_tensor_data" in server_meta["extensions"]
    with pytest.raises(InferenceServerException, match="Request for unknown model: 'nope'") as e:
        h.get_model_metadata("nope")
    assert e.value.status() == "404"


def test_curl_health_and_json_infer(server):
    curl = shutil.which("curl")
    assert curl, "curl is one of the Debian packages scripts/bootstrap installs"
    base = f"http://{server.http_url}"
    ready = subprocess.run([curl, "-s", "-o", "/dev/null", "-w", "%{http_code}",
                            f"{base}/v2/health/ready"], capture_output=True, text=True, timeout=30)
    assert ready.stdout == "200", ready
    a = [[float(i) for i in range(16)]]
    b = [[0.5] * 16]
    body = json.dumps({"inputs": [
        {"name": "a", "shape": [1, 16], "datatype": "FP32", "data": a},
        {"name": "b", "shape": [1, 16], "datatype": "FP32", "data": b}],
        "outputs": [{"name": "sum"}]})
    out = subprocess.run([curl, "-s", "-X", "POST", "-H", "Content-Type: application/json",
                          "-d", body, f"{base}/v2/models/two_io/infer"],
                         capture_output=True, text=True, timeout=30)
    answer = json.loads(out.stdout)
    assert answer["model_name"] == "two_io" and answer["model_version"] == "1"
    (summed,) = answer["outputs"]
    assert summed["name"] == "sum" and summed["shape"] == [1, 16] and summed["datatype"] == "FP32"
    assert summed["data"] == [x + 0.5 for x in a[0]]


# --------------------------------------------------------------------------
# inference: datatypes, classification, compression, statistics
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def types_repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("repo_http_types")
    gm.write_model(repo, "every_type", _identity_model(TYPES), _identity_config("every_type", TYPES))
    return repo


def _json_values(name, rows, seed):
    """Values JSON can carry: finite numbers, UTF-8 strings."""
    values = _values(name, rows, seed)
    if name in ("FP32", "FP64"):
        values.flat[0] = 1.5
    if name == "BYTES":
        words = [b"", b"a", "\u00fcnicode".encode(), b"x" * 100]
        values = np.array([[words[(seed + r + c) % len(words)] for c in range(WIDTH)]
                           for r in range(rows)], dtype=np.object_)
    return values


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_every_datatype_round_trips(start_server, types_repo, binary):
    srv = start_server(types_repo)
    h = srv.http_client()
    # FP16 and BF16 have no JSON form (as in Triton): they always go binary,
    # here beside the JSON tensors of the same request.
    half = ("FP16", "BF16")
    names = list(TYPES)
    arrays = {n: (_values if binary or n in half else _json_values)(n, 3, 11) for n in names}
    inputs = [_http_input(f"IN_{n}", arrays[n], n, binary or n in half) for n in names]
    outputs = [httpclient.InferRequestedOutput(f"OUT_{n}", binary_data=binary) for n in names]
    result = h.infer("every_type", inputs, outputs=outputs)
    for n in names:
        got = result.as_numpy(f"OUT_{n}")
        assert result.get_output(f"OUT_{n}")["datatype"] == n
        in_json = not binary and n not in half
        assert ("data" in result.get_output(f"OUT_{n}")) == in_json, n
        expected = arrays[n].astype(np.float32) if n == "BF16" else arrays[n]
        if n == "BYTES" and in_json:  # JSON strings come back as str
            got = np.array([[v.encode() for v in row] for row in got], dtype=np.object_)
        np.testing.assert_array_equal(got, expected, err_msg=n)
    # The half types in JSON are refused naming the tensor.
    half = np.ones((1, WIDTH), dtype=np.float16)
    body = {"inputs": [{"name": "IN_FP16", "shape": [1, WIDTH], "datatype": "FP16",
                        "data": half.tolist()}]}
    status, _, answer = _request(srv, "POST", "/v2/models/every_type/infer", json.dumps(body))
    assert status == 400 and "IN_FP16" in _error(answer), answer


def test_inference_matches_grpc_with_classification_and_compression(server, client, reference, rng):
    h = server.http_client()
    x = rng.standard_normal((3, 1024), dtype=np.float32)
    expected = reference.run("mlp_classifier", {"input": x})["probabilities"]
    for req, resp in ((None, None), ("gzip", "gzip"), ("deflate", "deflate")):
        result = h.infer("mlp_classifier", [_http_input("input", x, "FP32")],
                         request_compression_algorithm=req, response_compression_algorithm=resp)
        np.testing.assert_allclose(result.as_numpy("probabilities"), expected, rtol=1e-5, atol=1e-6)
    top = h.infer("mlp_classifier", [_http_input("input", x, "FP32")],
                  outputs=[httpclient.InferRequestedOutput("probabilities", class_count=3)])
    g = grpcclient.InferInput("input", list(x.shape), "FP32")
    g.set_data_from_numpy(x)
    grpc_top = client.infer("mlp_classifier", [g],
                            outputs=[grpcclient.InferRequestedOutput("probabilities", class_count=3)])
    np.testing.assert_array_equal(top.as_numpy("probabilities"), grpc_top.as_numpy("probabilities"))
    # Request id and parameters come back as on gRPC.
    result = h.infer("mlp_classifier", [_http_input("input", x[:1], "FP32")], request_id="req-7",
                     parameters={"custom": "value"})
    assert result.get_response()["id"] == "req-7"


def test_statistics_count_http_requests(server):
    h = server.http_client()
    before = h.get_inference_statistics("two_io")["model_stats"][0]
    a = np.ones((2, 16), dtype=np.float32)
    h.infer("two_io", [_http_input("a", a, "FP32"), _http_input("b", a, "FP32")])
    after = h.get_inference_statistics("two_io", "1")["model_stats"][0]
    assert after["inference_count"] == before["inference_count"] + 2
    assert after["inference_stats"]["success"]["count"] == before["inference_stats"]["success"]["count"] + 1
    everything = h.get_inference_statistics()["model_stats"]
    assert {"two_io", "mlp_classifier"} <= {m["name"] for m in everything}


# --------------------------------------------------------------------------
# shared memory
# --------------------------------------------------------------------------

def test_system_shared_memory_over_http(start_server, tmp_path):
    repo = tmp_path / "repo_shm_http"
    gm.write_model(repo, "m", gm.make_tiny_model(width=64), tiny_config("m", width=64))
    srv = start_server(repo)
    h = srv.http_client()
    x = np.random.default_rng(3).standard_normal((2, 64)).astype(np.float32)
    key_in, key_out = f"/coalesce_http_in_{os.getpid()}", f"/coalesce_http_out_{os.getpid()}"
    h_in = shm.create_shared_memory_region("in", key_in, x.nbytes)
    h_out = shm.create_shared_memory_region("out", key_out, x.nbytes)
    try:
        h.unregister_system_shared_memory()
        shm.set_shared_memory_region(h_in, [x])
        h.register_system_shared_memory("in", key_in, x.nbytes)
        h.register_system_shared_memory("out", key_out, x.nbytes)
        status = {r["name"]: r for r in h.get_system_shared_memory_status()}
        assert status["in"]["byte_size"] == x.nbytes and status["in"]["key"] == key_in
        assert srv.client().get_system_shared_memory_status(as_json=True)["regions"].keys() == {"in", "out"}
        inp = httpclient.InferInput("x", list(x.shape), "FP32")
        inp.set_shared_memory("in", x.nbytes)
        out = httpclient.InferRequestedOutput("y", binary_data=True)
        out.set_shared_memory("out", x.nbytes)
        result = h.infer("m", [inp], outputs=[out])
        assert result.get_output("y")["parameters"]["shared_memory_region"] == "out"
        np.testing.assert_allclose(shm.get_contents_as_numpy(h_out, np.float32, [2, 64]),
                                   x * 2 + 1, rtol=1e-6)
        with pytest.raises(InferenceServerException, match="already registered"):
            h.register_system_shared_memory("in", key_in, x.nbytes)
        h.unregister_system_shared_memory("in")
        assert [r["name"] for r in h.get_system_shared_memory_status()] == ["out"]
    finally:
        h.unregister_system_shared_memory()
        shm.destroy_shared_memory_region(h_in)
        shm.destroy_shared_memory_region(h_out)


def test_cuda_shared_memory_over_http(start_server, tmp_path):
    """On the simulated device plugin, whose IPC handle names a POSIX shared
    memory object (as in test_shared_memory.py)."""
    plugin = os.environ.get("COALESCE_SIMULATED_PLUGIN")
    assert plugin and os.path.isfile(plugin), "COALESCE_SIMULATED_PLUGIN: run through ctest"
    repo = tmp_path / "repo_cudashm_http"
    gm.write_model(repo, "m", gm.make_tiny_model(width=16), tiny_config("m", width=16))
    srv = start_server(repo, env={"COALESCE_DEVICE_PLUGIN": plugin})
    h = srv.http_client()
    x = np.arange(32, dtype=np.float32).reshape(2, 16)
    key = f"/coalesce_http_cudashm_{os.getpid()}"
    region = shm.create_shared_memory_region("cin", key, x.nbytes)
    try:
        shm.set_shared_memory_region(region, [x])
        handle = base64.b64encode(b"coalesce-simulated-ipc:" + key.encode()).decode()
        h.register_cuda_shared_memory("cuda_in", handle, 0, x.nbytes)
        (status,) = h.get_cuda_shared_memory_status()
        assert status == {"name": "cuda_in", "device_id": 0, "byte_size": x.nbytes}
        inp = httpclient.InferInput("x", list(x.shape), "FP32")
        inp.set_shared_memory("cuda_in", x.nbytes)
        result = h.infer("m", [inp])
        np.testing.assert_array_equal(result.as_numpy("y"), x * 2 + 1)
        with pytest.raises(InferenceServerException, match="'bad'.*not a simulated IPC handle"):
            h.register_cuda_shared_memory("bad", base64.b64encode(b"x" * 64).decode(), 0, 64)
    finally:
        h.unregister_cuda_shared_memory()
        shm.destroy_shared_memory_region(region)
    assert h.get_cuda_shared_memory_status() == []


# --------------------------------------------------------------------------
# sequences and the repository (Triton's quick-start layout)
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def quickstart_repo(tmp_path_factory):
    out = tmp_path_factory.mktemp("quickstart_http")
    quickstart.generate(out)
    return out


def test_sequences_over_http_match_grpc(start_server, quickstart_repo):
    srv = start_server(quickstart_repo)
    h, g = srv.http_client(), srv.client()
    values = [3, 1, 4, 1, 5]

    def run(send, seq_id):
        out = []
        for i, v in enumerate(values):
            out.append(send(v, seq_id, i == 0, i == len(values) - 1))
        return out

    def over_http(v, seq_id, start, end):
        r = h.infer("simple_sequence", [_http_input("INPUT", np.array([[v]], np.int32), "INT32")],
                    sequence_id=seq_id, sequence_start=start, sequence_end=end)
        return int(r.as_numpy("OUTPUT")[0, 0])

    def over_grpc(v, seq_id, start, end):
        inp = grpcclient.InferInput("INPUT", [1, 1], "INT32")
        inp.set_data_from_numpy(np.array([[v]], np.int32))
        r = g.infer("simple_sequence", [inp], sequence_id=seq_id, sequence_start=start,
                    sequence_end=end)
        return int(r.as_numpy("OUTPUT")[0, 0])

    assert run(over_http, 41) == run(over_grpc, 42)
    assert run(over_http, "string-id") == run(over_grpc, 43)
    with pytest.raises(InferenceServerException, match="START flag"):
        over_http(1, 99, False, False)


def test_repository_load_unload_over_http(start_server, quickstart_repo, tmp_path):
    srv = start_server(quickstart_repo, "--model-control-mode", "explicit", "--load-model", "simple")
    h = srv.http_client()
    index = {m["name"]: m for m in h.get_model_repository_index()}
    assert index["simple"]["state"] == "READY"
    h.load_model("simple", config=json.dumps({"max_batch_size": 4}))
    assert h.get_model_config("simple")["max_batch_size"] == 4
    with pytest.raises(InferenceServerException, match="failed to load 'simple'"):
        h.load_model("simple", config='"parameters": {"config": {{"max_batch_size": "16"}}}')
    with pytest.raises(InferenceServerException, match="failed to load 'wrong_model_name'"):
        h.load_model("wrong_model_name")
    with pytest.raises(InferenceServerException, match="failed to poll from model repository") as e:
        h.load_model("simple", config="{}", files={"file:" + "A" * 256: b"a"})
    assert e.value.status() == "500"
    assert h.is_server_live()
    # A new model from override files (sent base64-encoded over HTTP).
    gm.write_model(tmp_path / "scratch", "tiny", gm.make_tiny_model(width=4))
    model_bytes = (tmp_path / "scratch" / "tiny" / "1" / "model.onnx").read_bytes()
    config = {"name": "from_files", "max_batch_size": 2,
              "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [4]}],
              "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [4]}]}
    h.load_model("from_files", config=json.dumps(config), files={"file:1/model.onnx": model_bytes})
    x = np.ones((1, 4), np.float32)
    np.testing.assert_array_equal(h.infer("from_files", [_http_input("x", x, "FP32")]).as_numpy("y"),
                                  x * 2 + 1)
    h.unload_model("from_files", unload_dependents=True)
    assert not h.is_model_ready("from_files")


def test_model_load_needs_explicit_mode(server):
    status, _, body = _request(server, "POST", "/v2/repository/models/two_io/load")
    assert status == 503 and "explicit" in _error(body)


# --------------------------------------------------------------------------
# bad input: each gets its status and a message naming the problem
# --------------------------------------------------------------------------

def test_malformed_inference_bodies_get_400_naming_the_tensor(server):
    path = "/v2/models/two_io/infer"
    status, _, body = _request(server, "POST", path, b'{"inputs": [')
    assert status == 400 and "JSON" in _error(body)
    a = np.ones((1, 16), np.float32).tobytes()
    header = json.dumps({"inputs": [
        {"name": "a", "shape": [1, 16], "datatype": "FP32", "parameters": {"binary_data_size": 64}},
        {"name": "b", "shape": [1, 16], "datatype": "FP32", "parameters": {"binary_data_size": 64}}]})
    # One tensor's bytes are missing: the sizes do not add up to the data.
    status, _, body = _request(server, "POST", path, header.encode() + a,
                               {"Inference-Header-Content-Length": str(len(header))})
    assert status == 400 and "binary" in _error(body), body
    # The header length points past the body.
    status, _, body = _request(server, "POST", path, header.encode(),
                               {"Inference-Header-Content-Length": str(len(header) + 500)})
    assert status == 400 and "Inference-Header-Content-Length" in _error(body), body
    # Too few values for the shape.
    short = json.dumps({"inputs": [{"name": "a", "shape": [1, 16], "datatype": "FP32", "data": [1.0]},
                                   {"name": "b", "shape": [1, 16], "datatype": "FP32", "data": [1.0]}]})
    status, _, body = _request(server, "POST", path, short)
    assert status == 400 and "'a'" in _error(body), body
    status, _, body = _request(server, "POST", path, b"\x1f\x8b not gzip", {"Content-Encoding": "gzip"})
    assert status == 400, body
    status, _, body = _request(server, "POST", path, gzip.compress(short.encode()),
                               {"Content-Encoding": "gzip"})
    assert status == 400 and "'a'" in _error(body), body
    # The server still serves.
    assert server.http_client().is_server_ready()


def test_limits_lying_lengths_and_keep_alive(start_server, tmp_path):
    repo = tmp_path / "repo_limits"
    gm.write_model(repo, "m", gm.make_tiny_model(width=4), tiny_config("m", width=4))
    srv = start_server(repo, "--http-max-input-size", "4096", "--http-read-timeout-secs", "1")
    big = json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32",
                                  "data": [1.0, 2.0, 3.0, 4.0]}], "pad": "p" * 8192})
    status, _, body = _request(srv, "POST", "/v2/models/m/infer", big)
    assert status == 400 and "4096 bytes" in _error(body), body
    # Content-Length says more than comes: 400 once the read timeout passes.
    host, port = srv.http_url.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{}")
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400"), answer
    assert b"did not arrive within 1000 ms (Content-Length says 500 bytes)" in answer, answer
    # Keep-alive: several requests on one connection.
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        for _ in range(3):
            conn.request("GET", "/v2/health/ready")
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200
        assert not resp.will_close
    finally:
        conn.close()


def test_restricted_api_needs_its_header(start_server, tmp_path):
    repo = tmp_path / "repo_restricted"
    gm.write_model(repo, "m", gm.make_tiny_model(width=4), tiny_config("m", width=4))
    srv = start_server(repo, "--http-restricted-api", "model-repository,shared-memory:admin-key=s3cret",
                       wait_ready=False)
    h = srv.http_client()
    from conftest import wait_for
    wait_for(lambda: h.is_server_ready(), 60, 0.05, "HTTP readiness")
    with pytest.raises(InferenceServerException, match="expecting header 'admin-key'") as e:
        h.get_model_repository_index()
    assert e.value.status() == "403"
    assert h.get_model_repository_index(headers={"admin-key": "s3cret"})
    with pytest.raises(InferenceServerException, match="admin-key"):
        h.get_system_shared_memory_status()
    # Other groups stay open, and gRPC is not restricted by the HTTP flag.
    assert h.is_model_ready("m")
    assert srv.client().get_model_repository_index().models


def test_unknown_paths_and_methods(server):
    status, _, body = _request(server, "GET", "/v2/models/two_io/nothing")
    assert status == 404 and "no KServe v2 endpoint" in _error(body)
    status, headers, _ = _request(server, "GET", "/v2/models/two_io/infer")
    assert status == 405 and headers.get("Allow") == "POST"


def test_a_client_that_disconnects_cancels_its_queued_request(start_server, tmp_path):
    """HTTP has no cancel message: closing the connection is the client's
    cancellation. A request waiting for a 30 s batch window is answered
    CANCELED, and leaves the queue, as soon as its client is gone."""
    from conftest import wait_for
    from test_metrics import model_series, scrape

    repo = tmp_path / "repo_disconnect"
    window = "max_queue_delay_microseconds: 30000000 preferred_batch_size: [ 8 ]"
    gm.write_model(repo, "m", gm.make_tiny_model(width=4), tiny_config("m", width=4, dynamic_batching=window))
    srv = start_server(repo)

    def series(family, **labels):
        return model_series(scrape(srv.metrics_url)[1], family, "m", **labels)

    body = json.dumps({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32",
                                   "data": [1.0, 2.0, 3.0, 4.0]}]}).encode()
    host, port = srv.http_url.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        wait_for(lambda: series("nv_inference_pending_request_count") == 1, 20, 0.05, "the request queued")
        assert series("nv_inference_request_failure", reason="CANCELED") == 0
    wait_for(lambda: series("nv_inference_request_failure", reason="CANCELED") == 1, 20, 0.05,
             "the request cancelled (the window is 30 s)")
    assert series("nv_inference_pending_request_count") == 0
    # The model still serves.
    h = srv.http_client()
    x = httpclient.InferInput("x", [8, 4], "FP32")
    x.set_data_from_numpy(np.ones((8, 4), dtype=np.float32))
    assert h.infer("m", [x]).as_numpy("y").shape == (8, 4)
