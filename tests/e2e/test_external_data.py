"""Models whose weights live in external data (model.onnx + model.onnx.data),
as today's PyTorch exporter writes them: served from a Triton-layout
repository and compared with onnxruntime; broken or escaping locations are
refused at load with their reason while the other models serve."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import generate_models as gm
from e2e_util import make_inputs

IN, OUT = 64, 32


def _dense_model(seed: int = 0) -> onnx.ModelProto:
    """x [batch, 64] -> y = x W + b, W [64, 32] and b [32] random."""
    rng = np.random.default_rng(seed)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"]),
         helper.make_node("Add", ["h", "b"], ["y"])],
        "dense",
        inputs=[helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", IN])],
        outputs=[helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["batch", OUT])],
        initializer=[
            numpy_helper.from_array(rng.standard_normal((IN, OUT)).astype(np.float32), "W"),
            numpy_helper.from_array(rng.standard_normal(OUT).astype(np.float32), "b"),
        ])
    return gm.make_model(graph)


def _config(name: str) -> str:
    return f"""name: "{name}"
max_batch_size: 8
input [ {{ name: "x" data_type: TYPE_FP32 dims: [ {IN} ] }} ]
output [ {{ name: "y" data_type: TYPE_FP32 dims: [ {OUT} ] }} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
"""


def _write_external(repo, name: str) -> "Path":
    """<repo>/<name>/1/model.onnx with every tensor in model.onnx.data."""
    model_dir = gm.write_model(repo, name, None, _config(name))
    version = model_dir / "1"
    version.mkdir(parents=True, exist_ok=True)
    onnx.save_model(_dense_model(), str(version / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0)
    assert (version / "model.onnx.data").stat().st_size >= (IN * OUT + OUT) * 4
    return version


def _point_outside(version) -> None:
    """Rewrites W's location to a file beside the repository."""
    model = onnx.load(str(version / "model.onnx"), load_external_data=False)
    for tensor in model.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "../../../outside.data"
    (version / "model.onnx").write_bytes(model.SerializeToString())


def test_external_data_serves_and_matches_onnxruntime(start_server, tmp_path):
    repo = tmp_path / "repo"
    version = _write_external(repo, "dense_external")
    srv = start_server(repo)
    client = srv.client()
    reference = ort.InferenceSession(str(version / "model.onnx"),
                                     providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for batch in (1, 4):
        x = rng.standard_normal((batch, IN)).astype(np.float32)
        got = client.infer("dense_external", make_inputs(x=x)).as_numpy("y")
        want = reference.run(None, {"x": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("breakage, reason", [
    ("missing", "cannot open external data file 'model.onnx.data'"),
    ("outside", "leaves the model's folder"),
    ("short", "the tensor needs"),
])
def test_broken_external_data_is_refused_and_the_rest_serve(start_server, tmp_path,
                                                            breakage, reason):
    repo = tmp_path / "repo"
    _write_external(repo, "good")
    broken = _write_external(repo, "broken")
    data = broken / "model.onnx.data"
    if breakage == "missing":
        data.unlink()
    elif breakage == "outside":
        (tmp_path / "outside.data").write_bytes(data.read_bytes())
        _point_outside(broken)
    else:
        data.write_bytes(data.read_bytes()[:100])
    srv = start_server(repo)
    client = srv.client()
    index = {m.name: m for m in client.get_model_repository_index().models}
    assert index["broken"].state == "UNAVAILABLE", index["broken"]
    assert reason in index["broken"].reason, index["broken"].reason
    assert index["good"].state == "READY", index["good"]
    x = np.ones((2, IN), dtype=np.float32)
    assert client.infer("good", make_inputs(x=x)).as_numpy("y").shape == (2, OUT)
