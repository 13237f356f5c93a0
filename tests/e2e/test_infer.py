"""Inference through tritonclient (unary and streaming) and the raw stubs, checked
against onnxruntime on the same ONNX files."""

import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from e2e_util import (AsyncCollector, RawClient, assert_close, fp32_tensor, make_inputs,
                      output_arrays, raw_request, status_name)

RTOL = 1e-5
ATOL_MLP = 1e-6   # probabilities are in [0, 1]
ATOL_TWO_IO = 1e-5


@pytest.mark.parametrize("batch", [1, 2, 7, 16, 64])
def test_mlp_classifier_matches_onnxruntime(client, reference, rng, batch):
    x = rng.standard_normal((batch, 1024), dtype=np.float32)
    result = client.infer("mlp_classifier", make_inputs(input=x), client_timeout=60)
    expected = reference.run("mlp_classifier", {"input": x})["probabilities"]
    got = result.as_numpy("probabilities")
    assert_close(got, expected, RTOL, ATOL_MLP, f"mlp batch {batch}")
    np.testing.assert_allclose(got.sum(axis=1), np.ones(batch), rtol=1e-4)
    resp = result.get_response()
    assert resp.model_name == "mlp_classifier"
    assert resp.model_version == "1"


@pytest.mark.parametrize("batch", [1, 3])
def test_mlp_classifier_nobatch_matches_onnxruntime(client, reference, rng, batch):
    x = rng.standard_normal((batch, 1024), dtype=np.float32)
    result = client.infer("mlp_classifier_nobatch", make_inputs(input=x), client_timeout=60)
    expected = reference.run("mlp_classifier_nobatch", {"input": x})["probabilities"]
    assert_close(result.as_numpy("probabilities"), expected, RTOL, ATOL_MLP, "mlp_nobatch")


@pytest.mark.parametrize("batch", [1, 2, 5, 8])
def test_two_io_matches_onnxruntime(client, reference, rng, batch):
    a = rng.standard_normal((batch, 16), dtype=np.float32)
    b = rng.standard_normal((batch, 16), dtype=np.float32)
    result = client.infer("two_io", make_inputs(a=a, b=b), client_timeout=30)
    expected = reference.run("two_io", {"a": a, "b": b})
    assert_close(result.as_numpy("sum"), expected["sum"], RTOL, ATOL_TWO_IO, "sum")
    assert_close(result.as_numpy("product_proj"), expected["product_proj"], RTOL, ATOL_TWO_IO,
                 "product_proj")
    np.testing.assert_array_equal(result.as_numpy("sum"), a + b)


def test_explicit_version(client, reference, rng):
    a = rng.standard_normal((2, 16), dtype=np.float32)
    b = rng.standard_normal((2, 16), dtype=np.float32)
    result = client.infer("two_io", make_inputs(a=a, b=b), model_version="1")
    assert result.get_response().model_version == "1"
    assert_close(result.as_numpy("sum"), a + b, RTOL, ATOL_TWO_IO, "sum")


@pytest.mark.parametrize("wanted", [["sum"], ["product_proj"], ["product_proj", "sum"]])
def test_requested_output_subset(client, reference, rng, wanted):
    a = rng.standard_normal((3, 16), dtype=np.float32)
    b = rng.standard_normal((3, 16), dtype=np.float32)
    outputs = [grpcclient.InferRequestedOutput(n) for n in wanted]
    result = client.infer("two_io", make_inputs(a=a, b=b), outputs=outputs)
    resp = result.get_response()
    assert sorted(o.name for o in resp.outputs) == sorted(wanted)
    assert len(resp.raw_output_contents) == len(wanted)
    expected = reference.run("two_io", {"a": a, "b": b})
    for name in ("sum", "product_proj"):
        if name in wanted:
            assert_close(result.as_numpy(name), expected[name], RTOL, ATOL_TWO_IO, name)
        else:
            assert result.as_numpy(name) is None


def test_request_id_is_echoed(client, rng):
    x = rng.standard_normal((1, 4), dtype=np.float32)
    result = client.infer("tiny_plain", make_inputs(x=x), request_id="req-42")
    assert result.get_response().id == "req-42"


def test_raw_stub_outputs_are_positional_raw_contents(server, reference, rng):
    a = rng.standard_normal((4, 16), dtype=np.float32)
    b = rng.standard_normal((4, 16), dtype=np.float32)
    with RawClient(server.url) as raw:
        resp = raw.infer(raw_request("two_io", [fp32_tensor("a", a), fp32_tensor("b", b)]))
    assert [o.name for o in resp.outputs] == ["sum", "product_proj"]  # model order
    for o in resp.outputs:
        assert o.datatype == "FP32"
    got = output_arrays(resp)
    expected = reference.run("two_io", {"a": a, "b": b})
    assert_close(got["sum"], expected["sum"], RTOL, ATOL_TWO_IO, "sum")
    assert_close(got["product_proj"], expected["product_proj"], RTOL, ATOL_TWO_IO, "product_proj")


def test_typed_input_contents(server, reference, rng):
    """InferTensorContents.fp32_contents instead of raw bytes; the answer is still raw."""
    a = rng.standard_normal((2, 16), dtype=np.float32)
    b = rng.standard_normal((2, 16), dtype=np.float32)
    req = raw_request("two_io", [
        {"name": "a", "datatype": "FP32", "shape": [2, 16], "fp32": a.ravel().tolist()},
        {"name": "b", "datatype": "FP32", "shape": [2, 16], "fp32": b.ravel().tolist()},
    ])
    with RawClient(server.url) as raw:
        resp = raw.infer(req)
    got = output_arrays(resp)
    expected = reference.run("two_io", {"a": a, "b": b})
    assert_close(got["sum"], expected["sum"], RTOL, ATOL_TWO_IO, "sum")
    assert_close(got["product_proj"], expected["product_proj"], RTOL, ATOL_TWO_IO, "product_proj")


def test_async_infer(client, reference, rng):
    collector = AsyncCollector()
    arrays = [rng.standard_normal((2, 16), dtype=np.float32) for _ in range(8)]
    for i, a in enumerate(arrays):
        client.async_infer("two_io", make_inputs(a=a, b=a), collector.tagged(i),
                           request_id=str(i), client_timeout=60)
    for tag, result, error in collector.get(len(arrays), timeout=60):
        assert error is None, error
        assert result.get_response().id == str(tag)
        assert_close(result.as_numpy("sum"), arrays[tag] * 2, RTOL, ATOL_TWO_IO, "sum")


def test_streaming_infer(server, reference, rng):
    client = grpcclient.InferenceServerClient(url=server.url)
    collector = AsyncCollector()
    sent = {}
    try:
        client.start_stream(callback=collector.callback, stream_timeout=120)
        for i in range(6):
            model = "two_io" if i % 2 == 0 else "mlp_classifier"
            if model == "two_io":
                a = rng.standard_normal((i % 3 + 1, 16), dtype=np.float32)
                b = rng.standard_normal((i % 3 + 1, 16), dtype=np.float32)
                feeds = {"a": a, "b": b}
            else:
                feeds = {"input": rng.standard_normal((i % 4 + 1, 1024), dtype=np.float32)}
            sent[f"s{i}"] = (model, feeds)
            client.async_stream_infer(model, make_inputs(**feeds), request_id=f"s{i}")
        results = collector.get(len(sent), timeout=60)
    finally:
        client.stop_stream()
        client.close()
    seen = set()
    for result, error in results:
        assert error is None, error
        rid = result.get_response().id
        assert rid in sent and rid not in seen, rid
        seen.add(rid)
        model, feeds = sent[rid]
        expected = reference.run(model, feeds)
        atol = ATOL_TWO_IO if model == "two_io" else ATOL_MLP
        for name, value in expected.items():
            assert_close(result.as_numpy(name), value, RTOL, atol, f"{rid}:{name}")


def test_streaming_error_is_reported_in_stream(server, rng):
    """A bad request on a stream yields an error message, and the stream keeps working."""
    client = grpcclient.InferenceServerClient(url=server.url)
    collector = AsyncCollector()
    try:
        client.start_stream(callback=collector.callback, stream_timeout=60)
        client.async_stream_infer("no_such_model", make_inputs(x=np.ones((1, 4), np.float32)),
                                  request_id="bad")
        x = rng.standard_normal((1, 4), dtype=np.float32)
        client.async_stream_infer("tiny_plain", make_inputs(x=x), request_id="good")
        results = collector.get(2, timeout=30)
    finally:
        client.stop_stream()
        client.close()
    errors = [e for r, e in results if e is not None]
    goods = [r for r, e in results if e is None]
    assert len(errors) == 1 and len(goods) == 1, results
    assert "no_such_model" in str(errors[0])
    np.testing.assert_allclose(goods[0].as_numpy("y"), x * 2 + 1, rtol=1e-6)


def test_stream_responses_come_in_request_order(server):
    """ModelStreamInfer on non-decoupled models answers in request order (as Triton):
    the first request waits in tiny_slowq's 2 s batching window, the later ones go to
    models without (or with a shorter) delay and finish first, yet every response
    comes back in the order of the requests."""
    plan = [("tiny_slowq", 1.0), ("tiny_plain", 2.0), ("tiny_batching", 3.0),
            ("tiny_plain", 4.0), ("tiny_noconfig", 5.0)]
    requests = []
    for i, (model, value) in enumerate(plan):
        x = np.full((1, 4), value, np.float32)
        requests.append(raw_request(model, [fp32_tensor("x", x)], request_id=f"r{i}-{model}"))
    with RawClient(server.url) as raw:
        t0 = time.monotonic()
        responses = raw.stream(requests, len(requests), timeout=60)
        elapsed = time.monotonic() - t0
    got_ids = [r.infer_response.id for r in responses]
    assert [r.error_message for r in responses] == [""] * len(plan), responses
    assert got_ids == [r.id for r in requests], f"responses out of request order: {got_ids}"
    for resp, (model, value) in zip(responses, plan):
        assert resp.infer_response.model_name == model
        y = output_arrays(resp.infer_response)["y"]
        np.testing.assert_array_equal(y, np.full((1, 4), value * 2 + 1, np.float32))
    assert elapsed >= 1.5, f"{elapsed:.2f}s: the first request did not wait in tiny_slowq's window"


def test_stream_error_carries_request_id(server):
    """A stream request that fails (unknown model, bad input) is answered with
    error_message set and infer_response.id equal to the request's id, so that a
    client can tell which request failed; the stream keeps working."""
    good = np.full((1, 4), 7.0, np.float32)
    requests = [
        raw_request("no_such_model", [fp32_tensor("x", good)], request_id="bad-model"),
        raw_request("tiny_plain", [fp32_tensor("not_an_input", good)], request_id="bad-name"),
        raw_request("tiny_plain", [fp32_tensor("x", good, shape=[1, 5])], request_id="bad-shape"),
        raw_request("tiny_plain", [fp32_tensor("x", good)], request_id="good"),
        raw_request("tiny_plain", [fp32_tensor("x", good, datatype="FP64")], request_id="bad-dtype"),
    ]
    with RawClient(server.url) as raw:
        responses = raw.stream(requests, len(requests), timeout=60)
    by_id = {}
    for resp in responses:
        rid = resp.infer_response.id
        assert rid not in by_id, f"two responses with id {rid!r}: {responses}"
        by_id[rid] = resp
    assert set(by_id) == {r.id for r in requests}, (
        f"response ids {sorted(by_id)}: an error response must carry its request's id")
    for rid in ("bad-model", "bad-name", "bad-shape", "bad-dtype"):
        assert by_id[rid].error_message, f"{rid}: no error_message: {by_id[rid]}"
    assert "no_such_model" in by_id["bad-model"].error_message
    assert "not_an_input" in by_id["bad-name"].error_message
    assert by_id["good"].error_message == ""
    np.testing.assert_array_equal(output_arrays(by_id["good"].infer_response)["y"], good * 2 + 1)


def test_unknown_model_and_version_not_found(client):
    x = np.ones((1, 4), np.float32)
    with pytest.raises(InferenceServerException) as ei:
        client.infer("no_such_model", make_inputs(x=x))
    assert status_name(ei.value) == "NOT_FOUND", ei.value
    a = np.ones((1, 16), np.float32)
    with pytest.raises(InferenceServerException) as ei:
        client.infer("two_io", make_inputs(a=a, b=a), model_version="2")
    assert status_name(ei.value) == "NOT_FOUND", ei.value
