"""Every KServe v2 datatype end to end: BOOL, UINT8..UINT64, INT8..INT64,
FP16, BF16, FP32, FP64 and BYTES through a model that batches, sent as raw
contents (tritonclient) and as typed contents (the generated stubs), with
requests of different string lengths merged into one batch; casts on the
server (FP16/BF16 to FP32, numbers to strings), a string lookup table and
string equality; malformed BYTES data refused naming the tensor."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc
import ml_dtypes
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from onnx import TensorProto, helper
from tritonclient.grpc import service_pb2
from tritonclient.utils import deserialize_bytes_tensor

import generate_models as gm
from e2e_util import RawClient, get_stats

# KServe name -> (ONNX element type, numpy dtype used by tritonclient)
TYPES = {
    "BOOL": (TensorProto.BOOL, np.bool_),
    "UINT8": (TensorProto.UINT8, np.uint8),
    "UINT16": (TensorProto.UINT16, np.uint16),
    "UINT32": (TensorProto.UINT32, np.uint32),
    "UINT64": (TensorProto.UINT64, np.uint64),
    "INT8": (TensorProto.INT8, np.int8),
    "INT16": (TensorProto.INT16, np.int16),
    "INT32": (TensorProto.INT32, np.int32),
    "INT64": (TensorProto.INT64, np.int64),
    "FP16": (TensorProto.FLOAT16, np.float16),
    "BF16": (TensorProto.BFLOAT16, ml_dtypes.bfloat16),
    "FP32": (TensorProto.FLOAT, np.float32),
    "FP64": (TensorProto.DOUBLE, np.float64),
    "BYTES": (TensorProto.STRING, np.object_),
}
# Typed-contents field of each datatype (FP16 and BF16 have none).
TYPED_FIELD = {"BOOL": "bool_contents", "UINT8": "uint_contents", "UINT16": "uint_contents",
               "UINT32": "uint_contents", "UINT64": "uint64_contents", "INT8": "int_contents",
               "INT16": "int_contents", "INT32": "int_contents", "INT64": "int64_contents",
               "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents"}


CONFIG_TYPE = {"FP16": "TYPE_FP16", "BF16": "TYPE_BF16", "FP32": "TYPE_FP32", "FP64": "TYPE_FP64",
               "BYTES": "TYPE_STRING"}
WIDTH = 4


def _identity_model(types):
    inputs, outputs, nodes = [], [], []
    for name in types:
        elem = TYPES[name][0]
        inputs.append(helper.make_tensor_value_info(f"IN_{name}", elem, ["batch", WIDTH]))
        outputs.append(helper.make_tensor_value_info(f"OUT_{name}", elem, ["batch", WIDTH]))
        nodes.append(helper.make_node("Identity", [f"IN_{name}"], [f"OUT_{name}"]))
    return gm.make_model(helper.make_graph(nodes, "identity", inputs, outputs))


def _identity_config(model, types):
    def tensor(prefix, name):
        dtype = CONFIG_TYPE.get(name, f"TYPE_{name}")
        return f'{{ name: "{prefix}_{name}", data_type: {dtype}, dims: [ {WIDTH} ] }}'
    ins = ",\n  ".join(tensor("IN", n) for n in types)
    outs = ",\n  ".join(tensor("OUT", n) for n in types)
    return (f'name: "{model}"\nmax_batch_size: 8\ninput [\n  {ins}\n]\noutput [\n  {outs}\n]\n'
            "dynamic_batching { max_queue_delay_microseconds: 200000 }\n")


def _casts_model():
    """half/bf16 -> float, int32 -> string, a string table looked up by index,
    and string equality with a constant."""
    f = lambda n, t, d: helper.make_tensor_value_info(n, t, ["batch", d])  # noqa: E731
    nodes = [
        helper.make_node("Cast", ["half"], ["half_as_float"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["bf16"], ["bf16_as_float"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["number"], ["number_text"], to=TensorProto.STRING),
        helper.make_node("Gather", ["table", "index"], ["label"], axis=0),
        helper.make_node("Equal", ["word", "yes"], ["is_yes"]),
    ]
    table = helper.make_tensor("table", TensorProto.STRING, [3], [b"cat", b"", "h\u00e9".encode()])
    yes = helper.make_tensor("yes", TensorProto.STRING, [1], [b"yes"])
    graph = helper.make_graph(
        nodes, "casts",
        [f("half", TensorProto.FLOAT16, 2), f("bf16", TensorProto.BFLOAT16, 2),
         f("number", TensorProto.INT32, 2), f("index", TensorProto.INT64, 2),
         f("word", TensorProto.STRING, 2)],
        [f("half_as_float", TensorProto.FLOAT, 2), f("bf16_as_float", TensorProto.FLOAT, 2),
         f("number_text", TensorProto.STRING, 2), f("label", TensorProto.STRING, 2),
         f("is_yes", TensorProto.BOOL, 2)],
        [table, yes])
    return gm.make_model(graph)


def _half_model(elem):
    """y = relu(x @ W + b), all in `elem` (FLOAT16 or BFLOAT16)."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]),
             helper.make_node("Add", ["xw", "b"], ["pre"]),
             helper.make_node("Relu", ["pre"], ["y"])]
    dtype = np.float16 if elem == TensorProto.FLOAT16 else ml_dtypes.bfloat16
    inits = [helper.make_tensor(n, elem, a.shape, a.astype(dtype).tobytes(), raw=True)
             for n, a in (("w", w), ("b", b))]
    graph = helper.make_graph(nodes, "half", [helper.make_tensor_value_info("x", elem, ["batch", 4])],
                              [helper.make_tensor_value_info("y", elem, ["batch", 3])], inits)
    # The weights as the model holds them, for the reference.
    return gm.make_model(graph), w.astype(dtype).astype(np.float32), b.astype(dtype).astype(np.float32)


HALF = {"FP16": _half_model(TensorProto.FLOAT16), "BF16": _half_model(TensorProto.BFLOAT16)}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("repo_types")
    gm.write_model(repo, "every_type", _identity_model(TYPES), _identity_config("every_type", TYPES))
    gm.write_model(repo, "typed", _identity_model(TYPED_FIELD), _identity_config("typed", TYPED_FIELD))
    gm.write_model(repo, "casts", _casts_model(), 'name: "casts"\nmax_batch_size: 4\n')
    for name, (model, _, _) in HALF.items():
        gm.write_model(repo, f"half_{name}", model, f'name: "half_{name}"\nmax_batch_size: 4\n')
    return repo


@pytest.fixture
def server(start_server, repo):
    return start_server(repo)


def _values(name: str, rows: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    _, dtype = TYPES[name]
    shape = (rows, WIDTH)
    if name == "BOOL":
        return rng.integers(0, 2, shape).astype(bool)
    if name == "BYTES":
        words = [b"", b"a", "\u00fcnicode".encode(), bytes(range(256)), b"x" * 1000]
        return np.array([[words[(seed + r + c) % len(words)] for c in range(WIDTH)]
                         for r in range(rows)], dtype=np.object_)
    if name in ("FP16", "BF16", "FP32", "FP64"):
        values = rng.standard_normal(shape) * 1000
        values.flat[0] = np.inf
        values.flat[1] = -0.0
        return values.astype(dtype)
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    values.flat[0], values.flat[1] = info.min, info.max
    return values


def _inputs(rows: int, seed: int):
    inputs, arrays = [], {}
    for name in TYPES:
        arrays[name] = _values(name, rows, seed)
        inp = grpcclient.InferInput(f"IN_{name}", [rows, WIDTH], name)
        inp.set_data_from_numpy(arrays[name])
        inputs.append(inp)
    return inputs, arrays


def _assert_round_trip(result, arrays):
    for name, expected in arrays.items():
        got = result.as_numpy(f"OUT_{name}")
        assert result.get_output(f"OUT_{name}").datatype == name
        if name == "BF16":  # tritonclient returns BF16 as float32
            np.testing.assert_array_equal(got, expected.astype(np.float32))
        else:
            assert got.dtype == expected.dtype or name == "BYTES", (name, got.dtype)
            np.testing.assert_array_equal(got, expected, err_msg=name)


def test_every_datatype_round_trips_as_raw_contents_in_one_batch(server):
    client = server.client()
    before = get_stats(client, "every_type")
    # Three requests of different string lengths queue together (200 ms
    # delay) and run as one batch of 6 rows.
    sent = [_inputs(rows, seed) for rows, seed in ((1, 1), (3, 2), (2, 3))]
    with ThreadPoolExecutor(len(sent)) as pool:
        results = list(pool.map(lambda s: server.client().infer("every_type", s[0]), sent))
    for (_, arrays), result in zip(sent, results):
        _assert_round_trip(result, arrays)
    after = get_stats(client, "every_type")
    assert after.inference_count - before.inference_count == 6
    assert after.execution_count - before.execution_count < 3, "the requests were batched"


def test_typed_contents_of_every_datatype_that_has_a_field(server):
    request = service_pb2.ModelInferRequest(model_name="typed")
    arrays = {}
    for name, field in TYPED_FIELD.items():
        arrays[name] = _values(name, 2, 7)
        inp = request.inputs.add(name=f"IN_{name}", datatype=name, shape=[2, WIDTH])
        getattr(inp.contents, field).extend(arrays[name].reshape(-1).tolist())
    with RawClient(server.url) as raw:
        response = raw.infer(request)
    outputs = dict(zip((t.name for t in response.outputs), response.raw_output_contents))
    for name, expected in arrays.items():
        data = outputs[f"OUT_{name}"]
        if name == "BYTES":
            got = deserialize_bytes_tensor(data).reshape(expected.shape)
        else:
            got = np.frombuffer(data, dtype=expected.dtype).reshape(expected.shape)
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_half_types_have_no_typed_field(server):
    request = service_pb2.ModelInferRequest(model_name="casts")
    inp = request.inputs.add(name="half", datatype="FP16", shape=[1, 2])
    inp.contents.fp32_contents.extend([1.0, 2.0])
    with RawClient(server.url) as raw:
        err = raw.infer_error(request)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "'half'" in err.details() and "raw_input_contents" in err.details(), err.details()


def test_server_side_casts_string_table_and_equality(server):
    client = server.client()
    half = np.array([[1.5, -65504.0]], dtype=np.float16)
    bf16 = np.array([[3.140625, -0.5]], dtype=ml_dtypes.bfloat16)
    number = np.array([[-42, 2147483647]], dtype=np.int32)
    index = np.array([[2, 0]], dtype=np.int64)
    word = np.array([[b"yes", b"no"]], dtype=np.object_)
    inputs = []
    for name, array, datatype in (("half", half, "FP16"), ("bf16", bf16, "BF16"),
                                  ("number", number, "INT32"), ("index", index, "INT64"),
                                  ("word", word, "BYTES")):
        inp = grpcclient.InferInput(name, list(array.shape), datatype)
        inp.set_data_from_numpy(array)
        inputs.append(inp)
    result = client.infer("casts", inputs)
    np.testing.assert_array_equal(result.as_numpy("half_as_float"), [[1.5, -65504.0]])
    np.testing.assert_array_equal(result.as_numpy("bf16_as_float"), [[3.140625, -0.5]])
    assert result.as_numpy("number_text").tolist() == [[b"-42", b"2147483647"]]
    assert result.as_numpy("label").tolist() == [["h\u00e9".encode(), b"cat"]]
    assert result.as_numpy("is_yes").tolist() == [[True, False]]


def test_malformed_bytes_are_refused_naming_the_tensor(server):
    request = service_pb2.ModelInferRequest(model_name="casts")
    for name, datatype, raw in (
            ("half", "FP16", np.zeros((1, 2), np.float16).tobytes()),
            ("bf16", "BF16", np.zeros((1, 2), np.uint16).tobytes()),
            ("number", "INT32", np.zeros((1, 2), np.int32).tobytes()),
            ("index", "INT64", np.zeros((1, 2), np.int64).tobytes()),
            # Two elements announced; the second length runs past the end.
            ("word", "BYTES", b"\x01\x00\x00\x00a\x09\x00\x00\x00bc")):
        request.inputs.add(name=name, datatype=datatype, shape=[1, 2])
        request.raw_input_contents.append(raw)
    with RawClient(server.url) as raw:
        err = raw.infer_error(request)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "'word'" in err.details() and "BYTES" in err.details(), err.details()


@pytest.mark.parametrize("datatype,rtol", [("FP16", 2e-3), ("BF16", 1.6e-2)])
def test_half_precision_models_serve_in_their_declared_type(server, datatype, rtol):
    _, w, b = HALF[datatype]
    dtype = TYPES[datatype][1]
    x = np.random.default_rng(9).standard_normal((2, 4)).astype(dtype)
    inp = grpcclient.InferInput("x", [2, 4], datatype)
    inp.set_data_from_numpy(x)
    result = server.client().infer(f"half_{datatype}", [inp])
    assert result.get_output("y").datatype == datatype
    expected = np.maximum(x.astype(np.float32) @ w + b, 0)
    np.testing.assert_allclose(result.as_numpy("y").astype(np.float32), expected, rtol=rtol, atol=1e-2)
