"""Bad requests: exact gRPC status codes, and the offending tensor named in the message."""

import re

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from e2e_util import RawClient, fp32_tensor, make_inputs, raw_request, status_name

INVALID = grpc.StatusCode.INVALID_ARGUMENT


@pytest.fixture
def raw(server):
    with RawClient(server.url) as r:
        yield r


def ab(batch=2, width=16):
    rng = np.random.default_rng(batch * 100 + width)
    return (rng.standard_normal((batch, width), dtype=np.float32),
            rng.standard_normal((batch, width), dtype=np.float32))


def names_tensor(message: str, name: str) -> bool:
    """Does the message name the tensor? Short names ('a') must be quoted or follow
    'input'/'tensor'/'output', so that the English article does not count."""
    if len(name) > 2:
        return name in message
    quoted = any(q + name + r in message for q, r in (("'", "'"), ('"', '"'), ("`", "`"), ("[", "]")))
    return quoted or re.search(rf"\b(input|tensor|output)\s+{name}\b", message, re.I) is not None


def expect_invalid(raw, req, tensor):
    err = raw.infer_error(req)
    assert err.code() == INVALID, f"{err.code()}: {err.details()}"
    assert names_tensor(err.details(), tensor), f"message does not name '{tensor}': {err.details()!r}"
    return err


# -- through tritonclient --------------------------------------------------------

def test_missing_input(client):
    a, _ = ab()
    with pytest.raises(InferenceServerException) as ei:
        client.infer("two_io", make_inputs(a=a))
    assert status_name(ei.value) == "INVALID_ARGUMENT", ei.value
    assert names_tensor(ei.value.message(), "b"), ei.value.message()


def test_extra_input(client):
    a, b = ab()
    with pytest.raises(InferenceServerException) as ei:
        client.infer("two_io", make_inputs(a=a, b=b, c_extra=a))
    assert status_name(ei.value) == "INVALID_ARGUMENT", ei.value
    assert "c_extra" in ei.value.message(), ei.value.message()


def test_wrong_datatype_via_client(client):
    a, b = ab()
    with pytest.raises(InferenceServerException) as ei:
        client.infer("two_io", make_inputs(a=a.astype(np.float64), b=b))
    assert status_name(ei.value) == "INVALID_ARGUMENT", ei.value
    assert names_tensor(ei.value.message(), "a"), ei.value.message()


def test_wrong_shape_via_client(client):
    a = np.ones((2, 15), np.float32)
    b = np.ones((2, 16), np.float32)
    with pytest.raises(InferenceServerException) as ei:
        client.infer("two_io", make_inputs(a=a, b=b))
    assert status_name(ei.value) == "INVALID_ARGUMENT", ei.value
    assert names_tensor(ei.value.message(), "a"), ei.value.message()


def test_batch_above_max_batch_size(client):
    a, b = ab(batch=9)  # two_io: max_batch_size 8
    with pytest.raises(InferenceServerException) as ei:
        client.infer("two_io", make_inputs(a=a, b=b))
    assert status_name(ei.value) == "INVALID_ARGUMENT", ei.value
    msg = ei.value.message()
    assert "batch" in msg.lower() or names_tensor(msg, "a"), msg


def test_unknown_requested_output(client):
    a, b = ab()
    with pytest.raises(InferenceServerException) as ei:
        client.infer("two_io", make_inputs(a=a, b=b),
                     outputs=[grpcclient.InferRequestedOutput("no_such_output")])
    assert status_name(ei.value) == "INVALID_ARGUMENT", ei.value
    assert "no_such_output" in ei.value.message(), ei.value.message()


# -- through the raw stubs ---------------------------------------------------------

def test_missing_input_raw(raw):
    a, _ = ab()
    expect_invalid(raw, raw_request("two_io", [fp32_tensor("a", a)]), "b")


def test_extra_input_raw(raw):
    a, b = ab()
    expect_invalid(raw, raw_request("two_io", [fp32_tensor("a", a), fp32_tensor("b", b),
                                               fp32_tensor("zzz", a)]), "zzz")


def test_wrong_datatype_raw(raw):
    a, b = ab()
    a64 = a.astype("<f8")
    req = raw_request("two_io", [
        {"name": "a", "datatype": "FP64", "shape": [2, 16], "raw": a64.tobytes()},
        fp32_tensor("b", b)])
    expect_invalid(raw, req, "a")


def test_wrong_datatype_int32_raw(raw):
    a, b = ab()
    req = raw_request("two_io", [
        fp32_tensor("a", a),
        {"name": "b", "datatype": "INT32", "shape": [2, 16], "raw": b.astype("<i4").tobytes()}])
    expect_invalid(raw, req, "b")


@pytest.mark.parametrize("shape", [[2, 15], [2, 17], [32], [2, 16, 1], [1, 2, 16]])
def test_wrong_shape_raw(raw, shape):
    n = int(np.prod(shape))
    a = np.ones(n, np.float32)
    _, b = ab()
    req = raw_request("two_io", [
        {"name": "a", "datatype": "FP32", "shape": shape, "raw": a.tobytes()},
        fp32_tensor("b", b)])
    expect_invalid(raw, req, "a")


def test_mismatched_batch_between_inputs(raw):
    a, _ = ab(batch=2)
    _, b = ab(batch=3)
    err = raw.infer_error(raw_request("two_io", [fp32_tensor("a", a), fp32_tensor("b", b)]))
    assert err.code() == INVALID, f"{err.code()}: {err.details()}"


@pytest.mark.parametrize("delta", [-4, 4, -128])
def test_byte_size_mismatch_raw(raw, delta):
    a, b = ab()
    data = a.tobytes()
    data = data[:delta] if delta < 0 else data + b"\0" * delta
    req = raw_request("two_io", [fp32_tensor("a", a, raw=data), fp32_tensor("b", b)])
    expect_invalid(raw, req, "a")


def test_typed_contents_count_mismatch(raw):
    a, b = ab()
    req = raw_request("two_io", [
        {"name": "a", "datatype": "FP32", "shape": [2, 16], "fp32": a.ravel().tolist()[:-1]},
        {"name": "b", "datatype": "FP32", "shape": [2, 16], "fp32": b.ravel().tolist()}])
    expect_invalid(raw, req, "a")


def test_raw_and_typed_contents_together(raw):
    a, b = ab()
    req = raw_request("two_io", [
        fp32_tensor("a", a, fp32=a.ravel().tolist()),
        fp32_tensor("b", b)])
    expect_invalid(raw, req, "a")


def test_fewer_raw_contents_than_inputs(raw):
    """raw_input_contents is positional: one entry for two inputs is malformed."""
    a, b = ab()
    req = raw_request("two_io", [fp32_tensor("a", a), {"name": "b", "datatype": "FP32", "shape": [2, 16]}])
    err = raw.infer_error(req)
    assert err.code() == INVALID, f"{err.code()}: {err.details()}"


def test_batch_above_max_batch_size_raw(raw):
    a, b = ab(batch=9)
    err = raw.infer_error(raw_request("two_io", [fp32_tensor("a", a), fp32_tensor("b", b)]))
    assert err.code() == INVALID, f"{err.code()}: {err.details()}"


def test_unknown_model_raw(raw):
    a, b = ab()
    err = raw.infer_error(raw_request("nope_model", [fp32_tensor("a", a), fp32_tensor("b", b)]))
    assert err.code() == grpc.StatusCode.NOT_FOUND, f"{err.code()}: {err.details()}"
    assert "nope_model" in err.details()


def test_unknown_version_raw(raw):
    a, b = ab()
    err = raw.infer_error(raw_request("two_io", [fp32_tensor("a", a), fp32_tensor("b", b)],
                                      version="3"))
    assert err.code() == grpc.StatusCode.NOT_FOUND, f"{err.code()}: {err.details()}"


def test_server_still_serves_after_errors(client):
    a, b = ab()
    result = client.infer("two_io", make_inputs(a=a, b=b))
    np.testing.assert_array_equal(result.as_numpy("sum"), a + b)

