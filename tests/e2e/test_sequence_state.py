"""Sequence batching with implicit state, end to end: an accumulator whose
running sum lives in the server (state ACC_IN <- ACC_OUT, initial_state
zeros), with the direct strategy and START/READY, and with the oldest-first
strategy and all four controls (END adds the correlation ID). Sequences
interleaved over unary calls and over one stream; the errors a client gets."""

from __future__ import annotations

import queue

import numpy as np
import onnx
import pytest
import tritonclient.grpc as grpcclient
from onnx import TensorProto, helper, numpy_helper
from tritonclient.utils import InferenceServerException

import generate_models as gm

CONTROLS = """
    { name: "START", control [ { kind: CONTROL_SEQUENCE_START, int32_false_true: [ 0, 1 ] } ] },
    { name: "READY", control [ { kind: CONTROL_SEQUENCE_READY, int32_false_true: [ 0, 1 ] } ] }"""
END_CONTROLS = """,
    { name: "END", control [ { kind: CONTROL_SEQUENCE_END, int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID", control [ { kind: CONTROL_SEQUENCE_CORRID, data_type: TYPE_UINT64 } ] }"""


def accumulator(name: str, with_end: bool) -> onnx.ModelProto:
    """acc = ACC_IN * (1 - START) + INPUT; ACC_OUT = READY ? acc : ACC_IN;
    OUTPUT = acc (+ END * CORRID with `with_end`). All int32 [batch, 1]."""
    i32 = lambda n: helper.make_tensor_value_info(n, TensorProto.INT32, ["batch", 1])  # noqa: E731
    inputs = [i32("INPUT"), i32("START"), i32("READY"), i32("ACC_IN")]
    nodes = [
        helper.make_node("Sub", ["one", "START"], ["not_start"]),
        helper.make_node("Mul", ["ACC_IN", "not_start"], ["kept"]),
        helper.make_node("Add", ["kept", "INPUT"], ["acc"]),
        helper.make_node("Sub", ["one", "READY"], ["not_ready"]),
        helper.make_node("Mul", ["acc", "READY"], ["new_part"]),
        helper.make_node("Mul", ["ACC_IN", "not_ready"], ["old_part"]),
        helper.make_node("Add", ["new_part", "old_part"], ["ACC_OUT"]),
    ]
    if with_end:
        inputs += [i32("END"),
                   helper.make_tensor_value_info("CORRID", TensorProto.UINT64, ["batch", 1])]
        nodes += [helper.make_node("Cast", ["CORRID"], ["corrid32"], to=TensorProto.INT32),
                  helper.make_node("Mul", ["corrid32", "END"], ["bonus"]),
                  helper.make_node("Add", ["acc", "bonus"], ["OUTPUT"])]
    else:
        nodes.append(helper.make_node("Identity", ["acc"], ["OUTPUT"]))
    graph = helper.make_graph(
        nodes, name, inputs, [i32("OUTPUT"), i32("ACC_OUT")],
        [numpy_helper.from_array(np.array([[1]], dtype=np.int32), "one")])
    return gm.make_model(graph)


def config(name: str, with_end: bool) -> str:
    strategy = ("oldest { max_candidate_sequences: 4 preferred_batch_size: [ 4 ] "
                "max_queue_delay_microseconds: 1000 }" if with_end else "")
    initial = ("" if with_end else
               ' initial_state: { data_type: TYPE_INT32, dims: [ 1 ], zero_data: true, name: "zero" }')
    return f"""name: "{name}"
max_batch_size: 8
sequence_batching {{
  max_sequence_idle_microseconds: 5000000
  {strategy}
  control_input [{CONTROLS}{END_CONTROLS if with_end else ""}
  ]
  state [ {{ input_name: "ACC_IN", output_name: "ACC_OUT", data_type: TYPE_INT32, dims: [ 1 ]{initial} }} ]
}}
input [ {{ name: "INPUT", data_type: TYPE_INT32, dims: [ 1 ] }} ]
output [ {{ name: "OUTPUT", data_type: TYPE_INT32, dims: [ 1 ] }} ]
instance_group [ {{ count: {2 if with_end else 1}, kind: KIND_CPU }} ]
"""


MODELS = {"acc_direct": False, "acc_oldest": True}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    out = tmp_path_factory.mktemp("sequence_state")
    for name, with_end in MODELS.items():
        gm.write_model(out, name, accumulator(name, with_end), config(name, with_end))
    return out


@pytest.fixture
def client(start_server, repo):
    return start_server(repo).client()


def _input(value):
    inp = grpcclient.InferInput("INPUT", [1, 1], "INT32")
    inp.set_data_from_numpy(np.array([[value]], dtype=np.int32))
    return inp


def _seq_infer(client, model, value, seq_id, start=False, end=False):
    result = client.infer(model, [_input(value)], sequence_id=seq_id, sequence_start=start,
                          sequence_end=end)
    return int(result.as_numpy("OUTPUT")[0, 0])


@pytest.mark.parametrize("model", list(MODELS))
def test_sequences_over_unary_calls_interleaved(client, model):
    ids = (1001, 1002)
    values = {1001: [0, 1, 2, 3], 1002: [10, 20, 30, 40]}
    got = {i: [] for i in ids}
    for step in range(4):
        for seq_id in ids:
            got[seq_id].append(_seq_infer(client, model, values[seq_id][step], seq_id,
                                          start=step == 0, end=step == 3))
    for seq_id in ids:
        sums = list(np.cumsum(values[seq_id]))
        if MODELS[model]:
            sums[-1] += seq_id
        assert got[seq_id] == sums, model


def test_sequence_errors_name_the_problem(client):
    with pytest.raises(InferenceServerException, match="must specify the START flag"):
        _seq_infer(client, "acc_direct", 1, 777)
    with pytest.raises(InferenceServerException, match="non-zero or non-empty correlation ID"):
        client.infer("acc_direct", [_input(1)])
    # acc_oldest's CORRID is UINT64: a string ID cannot fill it.
    with pytest.raises(InferenceServerException, match="integer correlation ID"):
        _seq_infer(client, "acc_oldest", 1, "text-id", start=True)
    # String IDs work where no CORRID needs a number.
    assert _seq_infer(client, "acc_direct", 5, "abc", start=True) == 5
    assert _seq_infer(client, "acc_direct", 6, "abc", end=True) == 11
    with pytest.raises(InferenceServerException, match="START flag"):
        _seq_infer(client, "acc_direct", 1, "abc")


@pytest.mark.parametrize("model", list(MODELS))
def test_sequences_over_one_stream(client, model):
    """Two sequences interleaved on one stream, answers matched by request id."""
    answers: queue.Queue = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        sequences = {7: [5, 6, 7, 8, 9], 8: [1, -1, 2, -2, 3]}
        for step in range(5):
            for seq_id, values in sequences.items():
                client.async_stream_infer(
                    model, [_input(values[step])], request_id=f"{seq_id}_{step}",
                    sequence_id=seq_id, sequence_start=step == 0, sequence_end=step == 4)
        got = {}
        for _ in range(10):
            result, error = answers.get(timeout=30)
            assert error is None, error
            got[result.get_response().id] = int(result.as_numpy("OUTPUT")[0, 0])
    finally:
        client.stop_stream()
    for seq_id, values in sequences.items():
        sums = list(np.cumsum(values))
        if MODELS[model]:
            sums[-1] += seq_id
        assert [got[f"{seq_id}_{s}"] for s in range(5)] == sums
