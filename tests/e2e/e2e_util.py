"""Small helpers shared by the end-to-end tests."""

from __future__ import annotations

import queue
import time

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

MAX_MSG = 2**31 - 1  # what the Triton clients use


def make_inputs(**arrays: np.ndarray) -> list:
    """tritonclient InferInputs (sent as raw_input_contents) from numpy arrays."""
    inputs = []
    for name, arr in arrays.items():
        inp = grpcclient.InferInput(name, list(arr.shape), np_to_triton_dtype(arr.dtype))
        inp.set_data_from_numpy(arr)
        inputs.append(inp)
    return inputs


def status_name(exc: InferenceServerException) -> str:
    """'StatusCode.INVALID_ARGUMENT' -> 'INVALID_ARGUMENT'."""
    return str(exc.status()).rsplit(".", 1)[-1]


def assert_close(actual: np.ndarray, expected: np.ndarray, rtol=1e-5, atol=1e-6, what=""):
    assert actual is not None, f"{what}: output missing"
    assert actual.dtype == np.float32, f"{what}: dtype {actual.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


class RawClient:
    """Direct use of the generated stubs, for requests tritonclient refuses to build."""

    def __init__(self, url: str):
        self.channel = grpc.insecure_channel(url, options=[
            ("grpc.max_send_message_length", MAX_MSG),
            ("grpc.max_receive_message_length", MAX_MSG),
        ])
        self.stub = service_pb2_grpc.GRPCInferenceServiceStub(self.channel)

    def close(self):
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def infer(self, request, timeout: float = 30.0):
        return self.stub.ModelInfer(request, timeout=timeout)

    def infer_error(self, request, timeout: float = 30.0) -> grpc.RpcError:
        try:
            response = self.stub.ModelInfer(request, timeout=timeout)
        except grpc.RpcError as err:
            return err
        raise AssertionError(f"request unexpectedly succeeded: {response}")

    def health_check(self, service: str = "", timeout: float = 10.0) -> int:
        """grpc.health.v1.Health/Check without the grpcio-health-checking package.

        HealthCheckRequest{string service=1}; HealthCheckResponse{ServingStatus status=1},
        SERVING=1, NOT_SERVING=2. Returns the status number.
        """
        payload = b""
        if service:
            data = service.encode()
            payload = b"\x0a" + _varint(len(data)) + data
        call = self.channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=lambda x: x, response_deserializer=lambda x: x)
        reply = call(payload, timeout=timeout)
        return _decode_status_field(reply)


    def stream(self, requests, n_responses: int, timeout: float = 60.0) -> list:
        """Send requests on one ModelStreamInfer call and read n_responses
        ModelStreamInferResponse messages, in the order they arrive. The request
        side stays open until they are all here (then it is closed); the whole
        exchange is bounded by the call's deadline."""
        outbox = queue.Queue()
        for r in requests:
            outbox.put(r)

        def gen():
            while True:
                item = outbox.get()
                if item is None:
                    return
                yield item

        call = self.stub.ModelStreamInfer(gen(), timeout=timeout)
        out = []
        try:
            for resp in call:
                out.append(resp)
                if len(out) == n_responses:
                    break
        finally:
            outbox.put(None)
            call.cancel()
        assert len(out) == n_responses, f"stream ended after {len(out)} of {n_responses} responses"
        return out


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _decode_status_field(buf: bytes) -> int:
    """Read field 1 (varint) of a tiny protobuf message; 0 if absent."""
    i, status = 0, 0
    while i < len(buf):
        key = buf[i]
        i += 1
        field, wire = key >> 3, key & 7
        if wire != 0:
            raise ValueError(f"unexpected wire type {wire} in health reply {buf!r}")
        val, shift = 0, 0
        while True:
            b = buf[i]
            i += 1
            val |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if field == 1:
            status = val
    return status


def raw_request(model: str, tensors, outputs=(), version: str = "", request_id: str = ""):
    """Build a ModelInferRequest.

    tensors: iterable of dicts with keys name, datatype, shape and any of
      raw (bytes, appended to raw_input_contents), fp32 (list -> contents.fp32_contents),
      fp64 (list -> contents.fp64_contents).
    When any tensor has raw data every tensor must have it (raw_input_contents is positional).
    """
    req = service_pb2.ModelInferRequest(model_name=model, model_version=version, id=request_id)
    for t in tensors:
        inp = req.inputs.add()
        inp.name = t["name"]
        inp.datatype = t["datatype"]
        inp.shape.extend(t["shape"])
        if "fp32" in t:
            inp.contents.fp32_contents.extend(t["fp32"])
        if "fp64" in t:
            inp.contents.fp64_contents.extend(t["fp64"])
        if "raw" in t:
            req.raw_input_contents.append(t["raw"])
    for name in outputs:
        req.outputs.add().name = name
    return req


def fp32_tensor(name: str, arr: np.ndarray, **overrides) -> dict:
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    t = {"name": name, "datatype": "FP32", "shape": list(arr.shape), "raw": arr.tobytes()}
    t.update(overrides)
    return t


def output_arrays(response) -> dict:
    """name -> numpy array from a ModelInferResponse's raw_output_contents (by position)."""
    assert len(response.raw_output_contents) == len(response.outputs), (
        "server must answer with one raw_output_contents entry per output")
    out = {}
    for tensor, raw in zip(response.outputs, response.raw_output_contents):
        assert tensor.datatype == "FP32", tensor
        out[tensor.name] = np.frombuffer(raw, dtype="<f4").reshape(list(tensor.shape))
    return out


def get_stats(client, model: str):
    """The ModelStatistics protobuf of one model (version-less query)."""
    resp = client.get_inference_statistics(model_name=model, as_json=False)
    stats = [s for s in resp.model_stats if s.name == model]
    assert len(stats) == 1, f"expected one statistics entry for {model}: {resp}"
    return stats[0]


class AsyncCollector:
    """Collects async_infer / stream callbacks into a queue; get() is bounded."""

    def __init__(self):
        self.q = queue.Queue()

    def callback(self, result, error):
        self.q.put((result, error))

    def tagged(self, tag):
        def _cb(result, error):
            self.q.put((tag, result, error))
        return _cb

    def timed(self, tag):
        """Callback putting (tag, result, error, time.monotonic() at arrival)."""
        def _cb(result, error):
            self.q.put((tag, result, error, time.monotonic()))
        return _cb

    def get(self, n: int, timeout: float = 60.0) -> list:
        deadline = time.monotonic() + timeout
        items = []
        while len(items) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"only {len(items)} of {n} results within {timeout}s")
            try:
                items.append(self.q.get(timeout=remaining))
            except queue.Empty:
                raise TimeoutError(f"only {len(items)} of {n} results within {timeout}s") from None
        return items


def fill_queue(client, model: str, xs, queue_size: int, timeout: float = 20.0,
               client_timeout: float = 120.0):
    """Send len(xs) == queue_size + 1 async requests to a model whose queue holds
    queue_size requests (max_queue_size) and whose batcher keeps them waiting.

    The server handles calls concurrently, so which request is rejected is not
    known in advance; whichever it is, exactly one is answered UNAVAILABLE, and
    once that answer is here every other request is in the server's queue (the
    rejection proves the queue was full). Returns (collector, rejected_tag, t_rejected);
    the collector's (tag, result, error, t) items for the queued requests come later.
    """
    assert len(xs) == queue_size + 1
    collector = AsyncCollector()
    for i, x in enumerate(xs):
        client.async_infer(model, make_inputs(x=x), collector.timed(i), client_timeout=client_timeout)
    [(tag, result, error, t)] = collector.get(1, timeout=timeout)
    assert error is not None, (
        f"request {tag} to {model} completed while the queue should hold it: {result.get_response()}")
    assert status_name(error) == "UNAVAILABLE", error
    return collector, tag, t


def tools_required() -> bool:
    """CI (CI=true) and ctest (COALESCE_E2E_REQUIRE_SERVER=1) require every tool."""
    import os
    return (os.environ.get("CI", "").lower() == "true"
            or os.environ.get("COALESCE_E2E_REQUIRE_SERVER") == "1")


def unusable(reason: str):
    """A missing tool fails the test where tools are required, skips it otherwise."""
    import pytest
    if tools_required():
        pytest.fail(f"{reason} (required: CI=true or COALESCE_E2E_REQUIRE_SERVER=1)", pytrace=False)
    pytest.skip(reason)


def stop_process(proc, timeout: float) -> None:
    """SIGTERM, then SIGKILL if `proc` has not exited within `timeout` s."""
    import signal
    import subprocess
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
