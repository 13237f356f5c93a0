"""Triton's quick-start repository layout (examples/triton_quickstart: the
same eight model names and configs, our own ONNX files) served unchanged and
driven with tritonclient as Triton's client examples drive it: seven models
load, the Python one is refused by name; image classification with
class_count; int32, int8 and string add/sub; both sequence models in both
strategies over unary calls and a stream, answering what Triton's example
models answer; a load with a config override; inputs and outputs in system
shared memory."""

from __future__ import annotations

import json
import queue
import sys

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

from conftest import REPO_ROOT, Reference

sys.path.insert(0, str(REPO_ROOT / "examples"))
import generate_triton_quickstart as quickstart  # noqa: E402

LOADED = ("densenet_onnx", "inception_onnx", "simple", "simple_int8", "simple_string",
          "simple_sequence", "simple_dyna_sequence")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    out = tmp_path_factory.mktemp("triton_quickstart")
    quickstart.generate(out)
    return out


@pytest.fixture
def client(start_server, repo):
    return start_server(repo).client()


def _input(name, array, datatype):
    inp = grpcclient.InferInput(name, list(array.shape), datatype)
    inp.set_data_from_numpy(array)
    return inp


def test_seven_of_eight_load_and_the_python_model_is_refused_by_name(client):
    index = {m.name: m for m in client.get_model_repository_index().models}
    assert set(index) == set(LOADED) | {"simple_identity"}
    for name in LOADED:
        assert index[name].state == "READY", (name, index[name].reason)
        assert client.is_model_ready(name)
    assert index["simple_identity"].state == "UNAVAILABLE"
    assert "backend 'python' is not supported by this server" in index["simple_identity"].reason
    # Sequence control and state tensors are the server's, not the client's.
    meta = client.get_model_metadata("simple_dyna_sequence", as_json=True)
    assert [t["name"] for t in meta["inputs"]] == ["INPUT"]
    assert [t["name"] for t in meta["outputs"]] == ["OUTPUT"]


def _parse_classes(strings):
    parsed = []
    for s in strings:
        score, index, label = s.decode().split(":")
        parsed.append((float(score), int(index), label))
    return parsed


def test_image_classification_with_class_count(client, repo):
    ref = Reference(repo)
    image = np.random.default_rng(3).random((3, 224, 224), dtype=np.float32)
    raw = client.infer("densenet_onnx", [_input("data_0", image, "FP32")]).as_numpy("fc6_1")
    assert raw.shape == (1000,)
    expected = ref.run("densenet_onnx", {"data_0": image[None]})["fc6_1"].reshape(1000)
    np.testing.assert_allclose(raw, expected, rtol=1e-4, atol=1e-4)
    out = grpcclient.InferRequestedOutput("fc6_1", class_count=3)
    top = client.infer("densenet_onnx", [_input("data_0", image, "FP32")], outputs=[out])
    classes = _parse_classes(top.as_numpy("fc6_1"))
    order = np.argsort(-raw)[:3]
    assert [c[1] for c in classes] == list(order)
    assert [c[2] for c in classes] == [f"class_{i:04d}" for i in order]
    np.testing.assert_allclose([c[0] for c in classes], raw[order], rtol=1e-5)

    images = np.random.default_rng(4).random((2, 299, 299, 3), dtype=np.float32)
    out = grpcclient.InferRequestedOutput("InceptionV3/Predictions/Softmax", class_count=2)
    top = client.infer("inception_onnx", [_input("input", images, "FP32")], outputs=[out])
    rows = top.as_numpy("InceptionV3/Predictions/Softmax")
    assert rows.shape == (2, 2)
    probs = ref.run("inception_onnx", {"input": images})["InceptionV3/Predictions/Softmax"]
    for row, p in zip(rows, probs.reshape(2, 1001)):
        assert [c[1] for c in _parse_classes(row)] == list(np.argsort(-p)[:2])


@pytest.mark.parametrize("model,dtype,datatype", [("simple", np.int32, "INT32"),
                                                   ("simple_int8", np.int8, "INT8")])
def test_simple_add_sub(client, model, dtype, datatype):
    a = np.arange(16, dtype=dtype).reshape(1, 16) * 8
    b = np.full((1, 16), 7, dtype=dtype)
    result = client.infer(model, [_input("INPUT0", a, datatype), _input("INPUT1", b, datatype)])
    # int8 wraps around as the model computes in int8 (120 + 7 = -129 -> 127).
    expected_sum = (a.astype(np.int64) + b).astype(dtype)
    expected_diff = (a.astype(np.int64) - b).astype(dtype)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), expected_sum)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), expected_diff)
    assert result.as_numpy("OUTPUT0").dtype == dtype


def test_simple_string_add_sub(client):
    a = np.array([[str(i) for i in range(16)]], dtype=np.object_)
    b = np.array([[str(100 - i) for i in range(16)]], dtype=np.object_)
    result = client.infer("simple_string", [_input("INPUT0", a, "BYTES"), _input("INPUT1", b, "BYTES")])
    sums = [int(s) for s in result.as_numpy("OUTPUT0").reshape(-1)]
    diffs = [int(s) for s in result.as_numpy("OUTPUT1").reshape(-1)]
    assert sums == [100] * 16
    assert diffs == [2 * i - 100 for i in range(16)]
    bad = np.array([["x"] * 16], dtype=np.object_)
    with pytest.raises(InferenceServerException) as err:
        client.infer("simple_string", [_input("INPUT0", bad, "BYTES"), _input("INPUT1", b, "BYTES")])
    assert "INVALID_ARGUMENT" in str(err.value.status()) or "x" in str(err.value)


def _seq_infer(client, model, value, seq_id, start=False, end=False):
    result = client.infer(model, [_input("INPUT", np.array([[value]], dtype=np.int32), "INT32")],
                          sequence_id=seq_id, sequence_start=start, sequence_end=end)
    return int(result.as_numpy("OUTPUT")[0, 0])


def _expected(model, seq_id, values):
    """What Triton's example sequence models answer (and its sequence client
    examples check): INPUT + START; on END the dyna model adds the
    correlation ID. Implicit state is tested in test_sequence_state.py."""
    out = [v + (1 if i == 0 else 0) for i, v in enumerate(values)]
    if model == "simple_dyna_sequence":
        out[-1] += seq_id
    return out


@pytest.mark.parametrize("model", ["simple_sequence", "simple_dyna_sequence"])
def test_sequences_over_unary_calls_interleaved(client, model):
    """As Triton's simple_grpc_sequence_sync_infer_client: two sequences,
    interleaved, with the values it sends."""
    ids = (1000, 1001)
    values = {1000: [0, 11, 7, 5, 3, 2, 0, 1], 1001: [100, -11, -7, -5, -3, -2, 0, -1]}
    got = {i: [] for i in ids}
    n = len(values[1000])
    for step in range(n):
        for seq_id in ids:
            got[seq_id].append(_seq_infer(client, model, values[seq_id][step], seq_id,
                                          start=step == 0, end=step == n - 1))
    for seq_id in ids:
        assert got[seq_id] == _expected(model, seq_id, values[seq_id]), model


def test_sequence_errors_name_the_problem(client):
    with pytest.raises(InferenceServerException, match="must specify the START flag"):
        _seq_infer(client, "simple_sequence", 1, 777)
    with pytest.raises(InferenceServerException, match="non-zero or non-empty correlation ID"):
        client.infer("simple_sequence", [_input("INPUT", np.array([[1]], dtype=np.int32), "INT32")])
    # simple_dyna_sequence's CORRID is UINT64: a string ID cannot fill it.
    with pytest.raises(InferenceServerException, match="integer correlation ID"):
        _seq_infer(client, "simple_dyna_sequence", 1, "text-id", start=True)
    # String IDs work where no CORRID needs a number (Triton's examples send
    # a UUID to simple_sequence).
    assert _seq_infer(client, "simple_sequence", 20, "abc", start=True) == 21
    assert _seq_infer(client, "simple_sequence", -11, "abc", end=True) == -11
    with pytest.raises(InferenceServerException, match="START flag"):
        _seq_infer(client, "simple_sequence", 1, "abc")


@pytest.mark.parametrize("model", ["simple_sequence", "simple_dyna_sequence"])
def test_sequences_over_one_stream(client, model):
    """As Triton's simple_grpc_sequence_stream_infer_client: two sequences
    interleaved on one stream, answers matched by request id."""
    answers: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        sequences = {7: [5, 6, 7, 8, 9], 8: [1, -1, 2, -2, 3]}
        for step in range(5):
            for seq_id, values in sequences.items():
                client.async_stream_infer(
                    model, [_input("INPUT", np.array([[values[step]]], dtype=np.int32), "INT32")],
                    request_id=f"{seq_id}_{step}", sequence_id=seq_id,
                    sequence_start=step == 0, sequence_end=step == 4)
        got = {}
        for _ in range(10):
            result, error = answers.get(timeout=30)
            assert error is None, error
            got[result.get_response().id] = int(result.as_numpy("OUTPUT")[0, 0])
    finally:
        client.stop_stream()
    for seq_id, values in sequences.items():
        assert [got[f"{seq_id}_{s}"] for s in range(5)] == _expected(model, seq_id, values)


def test_load_with_config_override(start_server, repo):
    srv = start_server(repo, "--model-control-mode", "explicit", "--load-model", "simple")
    client = srv.client()
    config = {"name": "simple", "max_batch_size": 4,
              "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [16]},
                        {"name": "INPUT1", "data_type": "TYPE_INT32", "dims": [16]}],
              "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [16]},
                         {"name": "OUTPUT1", "data_type": "TYPE_INT32", "dims": [16]}],
              "dynamic_batching": {"max_queue_delay_microseconds": 100}}
    client.load_model("simple", config=json.dumps(config))
    assert client.get_model_config("simple", as_json=True)["config"]["max_batch_size"] == 4
    a = np.ones((5, 16), dtype=np.int32)
    with pytest.raises(InferenceServerException, match="batch size 5 is outside"):
        client.infer("simple", [_input("INPUT0", a, "INT32"), _input("INPUT1", a, "INT32")])
    client.load_model("simple_string")
    assert client.is_model_ready("simple_string")
    # No model here has dependents (only ensembles do, and they are refused).
    client.unload_model("simple", unload_dependents=True)
    assert not client.is_model_ready("simple")
    assert client.is_model_ready("simple_string")


def test_simple_through_system_shared_memory(client):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    handles = []
    try:
        for name, size in (("qs_in", 2 * a.nbytes), ("qs_out", 2 * a.nbytes)):
            handles.append(shm.create_shared_memory_region(name, f"/coalesce_qs_{name}", size))
            client.register_system_shared_memory(name, f"/coalesce_qs_{name}", size)
        shm.set_shared_memory_region(handles[0], [a, b])
        inputs = [grpcclient.InferInput("INPUT0", [1, 16], "INT32"),
                  grpcclient.InferInput("INPUT1", [1, 16], "INT32")]
        inputs[0].set_shared_memory("qs_in", a.nbytes)
        inputs[1].set_shared_memory("qs_in", b.nbytes, offset=a.nbytes)
        outputs = [grpcclient.InferRequestedOutput("OUTPUT0"), grpcclient.InferRequestedOutput("OUTPUT1")]
        outputs[0].set_shared_memory("qs_out", a.nbytes)
        outputs[1].set_shared_memory("qs_out", a.nbytes, offset=a.nbytes)
        client.infer("simple", inputs, outputs=outputs)
        np.testing.assert_array_equal(shm.get_contents_as_numpy(handles[1], np.int32, [1, 16]), a + b)
        np.testing.assert_array_equal(
            shm.get_contents_as_numpy(handles[1], np.int32, [1, 16], offset=a.nbytes), a - b)
    finally:
        client.unregister_system_shared_memory()
        for handle in handles:
            shm.destroy_shared_memory_region(handle)
