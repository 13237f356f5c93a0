"""Triton-layout repositories with models Coalesce does not serve: each is
refused at load by name, listed in RepositoryIndex with the reason, and the
other models serve."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

import generate_models as gm
from conftest import REPO_ROOT, tiny_config
from e2e_util import make_inputs

CORPUS = REPO_ROOT / "tests" / "configs" / "triton"


def test_other_backends_are_refused_by_name_and_the_rest_serve(start_server, tmp_path):
    repo = tmp_path / "repo_backends"
    gm.write_model(repo, "m", gm.make_tiny_model(), tiny_config("m"))
    refused = {
        "simple_identity": "backend 'python' is not supported by this server",
        "tensorrt_plan_options": "platform 'tensorrt_plan' is not supported by this server",
        "ensemble_preprocess_classify": "platform 'ensemble' is not supported by this server",
    }
    for name in refused:
        (repo / name / "1").mkdir(parents=True)
        shutil.copy(CORPUS / f"{name}.pbtxt", repo / name / "config.pbtxt")
    srv = start_server(repo)
    client = srv.client()
    index = {m.name: m for m in client.get_model_repository_index().models}
    for name, reason in refused.items():
        assert index[name].state == "UNAVAILABLE", index[name]
        assert reason in index[name].reason, index[name].reason
    x = np.ones((1, 4), dtype=np.float32)
    np.testing.assert_allclose(client.infer("m", make_inputs(x=x)).as_numpy("y"), x * 2 + 1)


def _scale_model(dims, name="scale"):
    """x -> y = x * 2 + 1 with x and y of shape `dims` (ints or names)."""
    from onnx import helper
    import onnx
    nodes = [helper.make_node("Mul", ["x", "two"], ["t"]), helper.make_node("Add", ["t", "one"], ["y"])]
    graph = helper.make_graph(
        nodes, name,
        inputs=[helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(dims))],
        outputs=[helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, list(dims))],
        initializer=[helper.make_tensor("two", onnx.TensorProto.FLOAT, [1], [2.0]),
                     helper.make_tensor("one", onnx.TensorProto.FLOAT, [1], [1.0])])
    return gm.make_model(graph)


RESHAPE_NO_BATCH = """
name: "image_like"
max_batch_size: 0
input [ { name: "x", data_type: TYPE_FP32, dims: [ 3, 4, 4 ], reshape { shape: [ 1, 3, 4, 4 ] } } ]
output [ { name: "y", data_type: TYPE_FP32, dims: [ 48 ], reshape { shape: [ 1, 3, 4, 4 ] } } ]
"""

RESHAPE_TO_SCALAR = """
name: "per_row_scalar"
max_batch_size: 8
input [ { name: "x", data_type: TYPE_FP32, dims: [ 1 ], reshape { shape: [ ] } } ]
output [ { name: "y", data_type: TYPE_FP32, dims: [ 1 ], reshape { shape: [ ] } } ]
dynamic_batching { max_queue_delay_microseconds: 20000 }
"""


def test_reshape_as_triton_defines_it(start_server, tmp_path):
    repo = tmp_path / "repo_reshape"
    gm.write_model(repo, "image_like", _scale_model([1, 3, 4, 4]), RESHAPE_NO_BATCH)
    gm.write_model(repo, "per_row_scalar", _scale_model(["batch"]), RESHAPE_TO_SCALAR)
    bad = RESHAPE_NO_BATCH.replace('"image_like"', '"bad_reshape"').replace("dims: [ 48 ]", "dims: [ 47 ]")
    gm.write_model(repo, "bad_reshape", _scale_model([1, 3, 4, 4]), bad)
    srv = start_server(repo)
    client = srv.client()
    index = {m.name: m for m in client.get_model_repository_index().models}
    assert index["image_like"].state == "READY", index["image_like"]
    assert index["per_row_scalar"].state == "READY", index["per_row_scalar"]
    assert index["bad_reshape"].state == "UNAVAILABLE"
    assert "output 'y': reshape [1,3,4,4] does not hold the elements of dims [47]" in index["bad_reshape"].reason

    # Metadata shows the client's shapes.
    meta = client.get_model_metadata("image_like")
    assert list(meta.inputs[0].shape) == [3, 4, 4] and list(meta.outputs[0].shape) == [48]

    x = np.arange(48, dtype=np.float32).reshape(3, 4, 4)
    y = client.infer("image_like", make_inputs(x=x), client_timeout=30).as_numpy("y")
    assert y.shape == (48,)
    np.testing.assert_allclose(y, x.reshape(48) * 2 + 1)

    # Batched: several requests of [rows, 1] become one [N] batch for the model.
    import concurrent.futures as cf
    def one(i):
        x = np.full((1 + i % 2, 1), i, dtype=np.float32)
        return x, client.infer("per_row_scalar", make_inputs(x=x), client_timeout=30).as_numpy("y")
    with cf.ThreadPoolExecutor(4) as pool:
        for x, y in pool.map(one, range(8)):
            assert y.shape == x.shape
            np.testing.assert_allclose(y, x * 2 + 1)
    stats = client.get_inference_statistics("per_row_scalar").model_stats[0]
    assert stats.inference_count == sum(1 + i % 2 for i in range(8))


CLASSIFIER = """
name: "classifier"
max_batch_size: 4
input [ { name: "x", data_type: TYPE_FP32, dims: [ 4 ] } ]
output [ { name: "y", data_type: TYPE_FP32, dims: [ 4 ], label_filename: "labels.txt" } ]
"""


def test_classification_extension_with_class_count(start_server, tmp_path):
    repo = tmp_path / "repo_classify"
    model_dir = gm.write_model(repo, "classifier", gm.make_tiny_model(), CLASSIFIER)
    (model_dir / "labels.txt").write_text("cat\ndog\nfish\n")  # class 3 has no label
    srv = start_server(repo)
    client = srv.client()
    x = np.array([[0.5, 3.0, 1.0, 2.0], [4.0, 0.0, 0.25, 1.0]], dtype=np.float32)  # y = 2x + 1
    outputs = [grpcclient.InferRequestedOutput("y", class_count=2)]
    result = client.infer("classifier", make_inputs(x=x), outputs=outputs, client_timeout=30)
    y = result.as_numpy("y")
    assert y.shape == (2, 2) and result.get_output("y").datatype == "BYTES"
    assert [[v.decode() for v in row] for row in y] == [
        ["7.000000:1:dog", "5.000000:3"], ["9.000000:0:cat", "3.000000:3"]]
    # Without the parameter the values come back as they are.
    plain = client.infer("classifier", make_inputs(x=x), client_timeout=30).as_numpy("y")
    np.testing.assert_allclose(plain, x * 2 + 1)


def test_label_file_outside_the_model_directory_is_refused(start_server, tmp_path):
    repo = tmp_path / "repo_labels"
    gm.write_model(repo, "classifier", gm.make_tiny_model(),
                   CLASSIFIER.replace('"labels.txt"', '"../../etc/passwd"'))
    srv = start_server(repo)
    model = {m.name: m for m in srv.client().get_model_repository_index().models}["classifier"]
    assert model.state == "UNAVAILABLE"
    assert "label_filename '../../etc/passwd' must name a file inside the model directory" in model.reason


def test_load_with_config_and_file_overrides(start_server, tmp_path):
    import json
    from tritonclient.utils import InferenceServerException
    repo = tmp_path / "repo_overrides"
    gm.write_model(repo, "m", gm.make_tiny_model(), tiny_config("m"))
    srv = start_server(repo, "--model-control-mode", "explicit", "--load-model", "m")
    client = srv.client()
    assert client.get_model_config("m").config.max_batch_size == 8

    # A config override replaces config.pbtxt.
    override = {"name": "m", "max_batch_size": 2,
                "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [4]}],
                "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [4]}]}
    client.load_model("m", config=json.dumps(override))
    assert client.get_model_config("m").config.max_batch_size == 2
    with pytest.raises(InferenceServerException, match=re.escape("input 'x': batch size 3 is outside [1, 2]")):
        client.infer("m", make_inputs(x=np.ones((3, 4), dtype=np.float32)), client_timeout=30)

    # Files and a config load a model the repository does not have.
    onnx_bytes = gm.make_tiny_model(scale=3.0).SerializeToString()
    fresh = dict(override, name="fresh", max_batch_size=4)
    client.load_model("fresh", config=json.dumps(fresh), files={"file:1/model.onnx": onnx_bytes})
    y = client.infer("fresh", make_inputs(x=np.ones((1, 4), dtype=np.float32)), client_timeout=30).as_numpy("y")
    np.testing.assert_allclose(y, np.full((1, 4), 4.0))

    bad = [
        (dict(config=json.dumps(fresh), files={"file:../escape/1/model.onnx": onnx_bytes}),
         "must be a relative path inside the model directory"),
        (dict(config=json.dumps(fresh), files={"file:/etc/1/model.onnx": onnx_bytes}),
         "must be a relative path inside the model directory"),
        (dict(files={"file:1/model.onnx": onnx_bytes}), "override files need the 'config' load parameter"),
        (dict(config="{not json"), "load parameter 'config' is not a model config in JSON"),
        (dict(config=json.dumps(dict(override, name="other"))), "names the model 'other', not 'm'"),
    ]
    for kwargs, message in bad:
        with pytest.raises(InferenceServerException, match=re.escape(message)):
            client.load_model("fresh" if "files" in kwargs else "m", **kwargs)
    # The failed loads left the served versions serving.
    assert client.infer("m", make_inputs(x=np.ones((1, 4), dtype=np.float32)), client_timeout=30)


def test_poll_mode_follows_the_repository_without_dropping_requests(start_server, tmp_path):
    import shutil as sh
    import threading
    from conftest import wait_for
    repo = tmp_path / "repo_poll"
    gm.write_model(repo, "m", gm.make_tiny_model(), tiny_config("m"))
    srv = start_server(repo, "--model-control-mode", "poll", "--repository-poll-secs", "1")
    client = srv.client()
    assert client.get_model_config("m").config.max_batch_size == 8

    # Traffic on "m" for the whole test: a reload must not fail a request.
    stop, errors, answered = threading.Event(), [], [0]
    def traffic():
        c = srv.client()
        x = np.ones((1, 4), dtype=np.float32)
        while not stop.is_set():
            try:
                np.testing.assert_allclose(c.infer("m", make_inputs(x=x), client_timeout=30).as_numpy("y"), x * 2 + 1)
                answered[0] += 1
            except Exception as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(repr(exc))
    thread = threading.Thread(target=traffic)
    thread.start()
    try:
        gm.write_model(repo, "n", gm.make_tiny_model(), tiny_config("n"))
        wait_for(lambda: client.is_model_ready("n"), 20, 0.1, "model 'n' to appear")
        (repo / "m" / "config.pbtxt").write_text(tiny_config("m", max_batch_size=4))
        wait_for(lambda: client.get_model_config("m").config.max_batch_size == 4, 20, 0.1,
                 "model 'm' to reload with max_batch_size 4")
        sh.rmtree(repo / "n")
        wait_for(lambda: not client.is_model_ready("n"), 20, 0.1, "model 'n' to leave")
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not errors, errors[:3]
    assert answered[0] > 0
    assert srv.log().count("model 'm' changed in the repository: loading") == 1

    # The server's own tuning cache beside a model is not a change of it.
    # A new model written at the same time shows that a later pass ran.
    (repo / "m" / "1" / "coalesce.tuning").write_text("coalesce-tuning-cache 2\n")
    (repo / "m" / "1" / "coalesce.tuning.tmp.1").write_text("partial")
    gm.write_model(repo, "k", gm.make_tiny_model(), tiny_config("k"))
    wait_for(lambda: client.is_model_ready("k"), 20, 0.1, "model 'k' to appear")
    assert srv.log().count("model 'm' changed in the repository: loading") == 1
    with pytest.raises(Exception, match="needs --model-control-mode explicit"):
        client.load_model("m")
