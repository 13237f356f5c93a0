"""Health, server/model metadata, model config and repository index through tritonclient."""

import numpy as np
import pytest
from tritonclient.grpc import model_config_pb2
from tritonclient.utils import InferenceServerException

from google.protobuf import text_format

from conftest import REPO_ROOT
from e2e_util import RawClient, make_inputs, status_name

SERVED = ["mlp_classifier", "mlp_classifier_nobatch", "two_io", "tiny_plain", "tiny_noconfig"]


def test_server_live_and_ready(client):
    assert client.is_server_live()
    assert client.is_server_ready()


def test_grpc_health_check_serving(server):
    with RawClient(server.url) as raw:
        assert raw.health_check() == 1  # SERVING


@pytest.mark.parametrize("model", SERVED)
def test_model_ready(client, model):
    assert client.is_model_ready(model)
    assert client.is_model_ready(model, "1")


def test_model_not_ready_for_unknown_model_or_version(client):
    for name, version in [("no_such_model", ""), ("two_io", "7")]:
        try:
            assert not client.is_model_ready(name, version)
        except InferenceServerException as exc:
            assert status_name(exc) == "NOT_FOUND", exc


def test_server_metadata(client):
    md = client.get_server_metadata()
    assert md.name
    assert md.version
    ext = list(md.extensions)
    # the server implements ModelStatistics and the repository RPCs; perf_analyzer
    # only asks for statistics when the extension is listed
    assert "statistics" in ext, ext
    assert "model_repository" in ext, ext
    assert len(ext) == len(set(ext)), f"duplicate extensions: {ext}"


def test_model_metadata_mlp(client):
    md = client.get_model_metadata("mlp_classifier")
    assert md.name == "mlp_classifier"
    assert list(md.versions) == ["1"]
    assert [(t.name, t.datatype, list(t.shape)) for t in md.inputs] == [("input", "FP32", [-1, 1024])]
    assert [(t.name, t.datatype, list(t.shape)) for t in md.outputs] == [("probabilities", "FP32", [-1, 1000])]


def test_model_metadata_two_io(client):
    md = client.get_model_metadata("two_io", "1")
    assert md.name == "two_io"
    assert {t.name: (t.datatype, list(t.shape)) for t in md.inputs} == {
        "a": ("FP32", [-1, 16]), "b": ("FP32", [-1, 16])}
    assert {t.name: (t.datatype, list(t.shape)) for t in md.outputs} == {
        "sum": ("FP32", [-1, 16]), "product_proj": ("FP32", [-1, 4])}


def test_model_metadata_json(client):
    md = client.get_model_metadata("two_io", as_json=True)
    shapes = {t["name"]: [int(d) for d in t["shape"]] for t in md["inputs"]}
    assert shapes == {"a": [-1, 16], "b": [-1, 16]}


def test_model_metadata_unknown_model(client):
    with pytest.raises(InferenceServerException) as ei:
        client.get_model_metadata("no_such_model")
    assert status_name(ei.value) == "NOT_FOUND", ei.value
    with pytest.raises(InferenceServerException) as ei:
        client.get_model_metadata("two_io", "7")
    assert status_name(ei.value) == "NOT_FOUND", ei.value


def checked_in_config(name: str) -> model_config_pb2.ModelConfig:
    """examples/models/<name>/config.pbtxt, the file the shared repository copies."""
    text = (REPO_ROOT / "examples" / "models" / name / "config.pbtxt").read_text()
    return text_format.Parse(text, model_config_pb2.ModelConfig())


def test_model_config_mlp(client):
    cfg = client.get_model_config("mlp_classifier").config
    file_cfg = checked_in_config("mlp_classifier")
    assert cfg.name == "mlp_classifier"
    assert cfg.max_batch_size == 64
    assert [(i.name, i.data_type, list(i.dims)) for i in cfg.input] == [
        ("input", model_config_pb2.TYPE_FP32, [1024])]
    assert [(o.name, o.data_type, list(o.dims)) for o in cfg.output] == [
        ("probabilities", model_config_pb2.TYPE_FP32, [1000])]
    assert cfg.HasField("dynamic_batching")
    # the batching settings are served as written in the checked-in config.pbtxt
    assert file_cfg.HasField("dynamic_batching")
    assert list(cfg.dynamic_batching.preferred_batch_size) == \
        list(file_cfg.dynamic_batching.preferred_batch_size)
    assert cfg.dynamic_batching.max_queue_delay_microseconds == \
        file_cfg.dynamic_batching.max_queue_delay_microseconds
    assert len(cfg.instance_group) >= 1
    assert sum(g.count for g in cfg.instance_group) == 1
    assert all(g.kind == model_config_pb2.ModelInstanceGroup.KIND_CPU for g in cfg.instance_group)


def test_model_config_nobatch_has_no_dynamic_batching(client):
    cfg = client.get_model_config("mlp_classifier_nobatch").config
    assert cfg.max_batch_size == 64
    assert not cfg.HasField("dynamic_batching")


def test_model_config_queue_policy(client):
    cfg = client.get_model_config("tiny_qfull").config
    assert cfg.dynamic_batching.max_queue_delay_microseconds == 3000000
    assert cfg.dynamic_batching.default_queue_policy.max_queue_size == 1
    cfg = client.get_model_config("tiny_qreject").config
    pol = cfg.dynamic_batching.default_queue_policy
    assert pol.timeout_action == model_config_pb2.ModelQueuePolicy.REJECT
    assert pol.default_timeout_microseconds == 100000


def test_model_config_json(client):
    cfg = client.get_model_config("two_io", as_json=True)["config"]
    assert cfg["name"] == "two_io"
    assert int(cfg["max_batch_size"]) == 8
    assert "dynamic_batching" in cfg


def test_model_config_unknown_model(client):
    with pytest.raises(InferenceServerException) as ei:
        client.get_model_config("no_such_model")
    assert status_name(ei.value) == "NOT_FOUND", ei.value


def test_missing_config_is_completed_from_onnx(client):
    """tiny_noconfig has no config.pbtxt: inputs/outputs come from the ONNX graph."""
    cfg = client.get_model_config("tiny_noconfig").config
    assert cfg.name == "tiny_noconfig"
    assert [(i.name, i.data_type) for i in cfg.input] == [("x", model_config_pb2.TYPE_FP32)]
    assert [(o.name, o.data_type) for o in cfg.output] == [("y", model_config_pb2.TYPE_FP32)]
    md = client.get_model_metadata("tiny_noconfig")
    assert [(t.name, list(t.shape)) for t in md.inputs] == [("x", [-1, 4])]
    assert [(t.name, list(t.shape)) for t in md.outputs] == [("y", [-1, 4])]
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    result = client.infer("tiny_noconfig", make_inputs(x=x))
    np.testing.assert_allclose(result.as_numpy("y"), x * 2 + 1, rtol=1e-6)


def test_repository_index(client, server):
    index = client.get_model_repository_index()
    by_name = {}
    for m in index.models:
        by_name.setdefault(m.name, []).append(m)
    for name in SERVED:
        assert name in by_name, f"{name} missing from {index}"
        states = {(m.version, m.state) for m in by_name[name]}
        assert ("1", "READY") in states, f"{name}: {states}"
    # every model folder of the repository is listed
    folders = {p.name for p in server.repo.iterdir() if p.is_dir()}
    assert folders <= set(by_name), folders - set(by_name)


def test_repository_index_json(client):
    index = client.get_model_repository_index(as_json=True)
    names = {m["name"] for m in index["models"]}
    assert {"mlp_classifier", "two_io"} <= names
