"""Broken models in the repository, and explicit model control (load/unload)."""

import numpy as np
import pytest
from tritonclient.utils import InferenceServerException

import generate_models as gm
from conftest import tiny_config, wait_for
from e2e_util import make_inputs, status_name


def index_by_name(client):
    out = {}
    for m in client.get_model_repository_index().models:
        out.setdefault(m.name, []).append(m)
    return out


def tiny_ok(client, model, value=1.0):
    x = np.full((2, 4), value, np.float32)
    result = client.infer(model, make_inputs(x=x), client_timeout=30)
    np.testing.assert_array_equal(result.as_numpy("y"), x * 2 + 1)


FLUSH_DENORMALS = '\nparameters {{ key: "flush_denormals" value {{ string_value: "{}" }} }}\n'
BROKEN = ("bad_op", "bad_bytes", "bad_config", "bad_parameter")


@pytest.fixture
def broken_repo(tmp_path):
    repo = tmp_path / "repo_broken"
    gm.write_model(repo, "good", gm.make_tiny_model(), tiny_config("good", 8, ""))
    gm.write_model(repo, "bad_op", gm.make_unsupported_op_model("Det"), tiny_config("bad_op"))
    gm.write_model(repo, "bad_bytes", gm.garbage_bytes(), tiny_config("bad_bytes"))
    # config that contradicts the model: the input is called 'x' in the graph
    wrong = tiny_config("bad_config").replace('name: "x"', 'name: "not_in_graph"')
    gm.write_model(repo, "bad_config", gm.make_tiny_model(), wrong)
    # a server parameter with a value it does not take, and the same one set right
    gm.write_model(repo, "bad_parameter", gm.make_tiny_model(),
                   tiny_config("bad_parameter") + FLUSH_DENORMALS.format("maybe"))
    gm.write_model(repo, "good_no_flush", gm.make_tiny_model(),
                   tiny_config("good_no_flush") + FLUSH_DENORMALS.format("false"))
    return repo


def test_broken_models_are_unavailable_and_others_serve(start_server, broken_repo):
    srv = start_server(broken_repo)
    client = srv.client()
    index = index_by_name(client)
    assert set(index) == {"good", "good_no_flush", *BROKEN}, index
    assert any(m.state == "READY" for m in index["good"]), index["good"]
    for name in BROKEN:
        entries = index[name]
        assert all(m.state == "UNAVAILABLE" for m in entries), entries
        assert all(m.reason for m in entries), f"{name}: no reason given: {entries}"
    assert any("Det" in m.reason for m in index["bad_op"]), index["bad_op"]
    bad_bytes_reason = " ".join(m.reason for m in index["bad_bytes"]).lower()
    assert any(w in bad_bytes_reason for w in ("onnx", "parse", "protobuf", "model.onnx", "invalid")), \
        bad_bytes_reason
    assert any("not_in_graph" in m.reason for m in index["bad_config"]), index["bad_config"]
    assert any("flush_denormals" in m.reason and "maybe" in m.reason
               for m in index["bad_parameter"]), index["bad_parameter"]

    assert client.is_server_live()
    assert client.is_model_ready("good")
    for name in BROKEN:
        assert not client.is_model_ready(name)
        with pytest.raises(InferenceServerException) as ei:
            client.infer(name, make_inputs(x=np.ones((1, 4), np.float32)))
        assert status_name(ei.value) == "NOT_FOUND", ei.value  # not loaded = unknown
    tiny_ok(client, "good")
    tiny_ok(client, "good_no_flush")


def test_explicit_model_control(start_server, tmp_path):
    repo = tmp_path / "repo_explicit"
    for name in ("alpha", "beta"):
        gm.write_model(repo, name, gm.make_tiny_model(), tiny_config(name, 8, "max_queue_delay_microseconds: 1000"))
    srv = start_server(repo, "--model-control-mode", "explicit", "--load-model", "alpha")
    client = srv.client()

    assert client.is_model_ready("alpha")
    assert not client.is_model_ready("beta")
    index = index_by_name(client)
    assert {"alpha", "beta"} <= set(index), index  # unloaded models are listed too
    assert any(m.state == "READY" for m in index["alpha"])
    assert not any(m.state == "READY" for m in index["beta"])
    tiny_ok(client, "alpha")
    with pytest.raises(InferenceServerException) as ei:
        client.infer("beta", make_inputs(x=np.ones((1, 4), np.float32)))
    assert status_name(ei.value) == "NOT_FOUND", ei.value

    # load
    client.load_model("beta", client_timeout=60)
    wait_for(lambda: client.is_model_ready("beta"), 30, what="beta ready")
    tiny_ok(client, "beta", 5.0)
    assert any(m.state == "READY" for m in index_by_name(client)["beta"])

    # unload
    client.unload_model("alpha", client_timeout=60)
    wait_for(lambda: not client.is_model_ready("alpha"), 30, what="alpha unloaded")
    with pytest.raises(InferenceServerException) as ei:
        client.infer("alpha", make_inputs(x=np.ones((1, 4), np.float32)))
    assert status_name(ei.value) == "NOT_FOUND", ei.value
    index = index_by_name(client)
    assert "alpha" in index and not any(m.state == "READY" for m in index["alpha"]), index.get("alpha")
    tiny_ok(client, "beta")

    # a model added to the repository after start-up can be loaded
    gm.write_model(repo, "gamma", gm.make_tiny_model(), tiny_config("gamma"))
    client.load_model("gamma", client_timeout=60)
    wait_for(lambda: client.is_model_ready("gamma"), 30, what="gamma ready")
    tiny_ok(client, "gamma", -1.0)

    # reload after unload
    client.load_model("alpha", client_timeout=60)
    wait_for(lambda: client.is_model_ready("alpha"), 30, what="alpha reloaded")
    tiny_ok(client, "alpha", 2.0)

    # loading something that is not there fails and changes nothing
    with pytest.raises(InferenceServerException) as ei:
        client.load_model("no_such_model", client_timeout=60)
    assert status_name(ei.value) == "NOT_FOUND", ei.value
    assert client.is_model_ready("beta")


def test_explicit_load_of_broken_model_fails(start_server, tmp_path):
    repo = tmp_path / "repo_explicit_broken"
    gm.write_model(repo, "ok", gm.make_tiny_model(), tiny_config("ok"))
    gm.write_model(repo, "bad_op", gm.make_unsupported_op_model("Det"), tiny_config("bad_op"))
    srv = start_server(repo, "--model-control-mode", "explicit")
    client = srv.client()
    assert not client.is_model_ready("ok")
    with pytest.raises(InferenceServerException) as ei:
        client.load_model("bad_op", client_timeout=60)
    assert status_name(ei.value) == "INVALID_ARGUMENT", ei.value  # the model file is invalid
    assert "Det" in ei.value.message(), ei.value.message()
    assert not client.is_model_ready("bad_op")
    client.load_model("ok", client_timeout=60)
    wait_for(lambda: client.is_model_ready("ok"), 30, what="ok ready")
    tiny_ok(client, "ok")


def test_load_unload_rejected_in_mode_none(client):
    """With --model-control-mode none the repository is fixed: UNAVAILABLE (as Triton)."""
    with pytest.raises(InferenceServerException) as ei:
        client.unload_model("tiny_plain", client_timeout=30)
    assert status_name(ei.value) == "UNAVAILABLE", ei.value
    with pytest.raises(InferenceServerException) as ei:
        client.load_model("tiny_plain", client_timeout=30)
    assert status_name(ei.value) == "UNAVAILABLE", ei.value
    assert client.is_model_ready("tiny_plain")
    tiny_ok(client, "tiny_plain")


def test_failed_reload_keeps_previous_version_serving(start_server, tmp_path):
    """Explicit mode: load_model on a loaded model whose files were broken since
    (model.onnx overwritten with garbage) fails, and the loaded version keeps serving."""
    repo = tmp_path / "repo_reload"
    model_dir = gm.write_model(repo, "m", gm.make_tiny_model(), tiny_config("m"))
    gm.write_model(repo, "other", gm.make_tiny_model(), tiny_config("other"))
    srv = start_server(repo, "--model-control-mode", "explicit", "--load-model", "m")
    client = srv.client()
    assert client.is_model_ready("m")
    tiny_ok(client, "m")

    (model_dir / "1" / "model.onnx").write_bytes(gm.garbage_bytes())
    with pytest.raises(InferenceServerException) as ei:
        client.load_model("m", client_timeout=60)
    assert status_name(ei.value) == "INVALID_ARGUMENT", ei.value
    assert client.is_model_ready("m")
    tiny_ok(client, "m", 3.0)
    assert any(e.state == "READY" for e in index_by_name(client)["m"])
    # the server as a whole is unaffected
    assert client.is_server_ready()
    client.load_model("other", client_timeout=60)
    tiny_ok(client, "other")


@pytest.mark.parametrize("name", ["..", ".", "a/b", "../repo_paths", "other/..", "/other", ""])
def test_load_of_path_like_names_is_not_found(start_server, tmp_path, name):
    """Names that are not a model folder of the repository (path components, a slash,
    empty) are NOT_FOUND; nothing outside the repository is read and the server keeps
    serving."""
    repo = tmp_path / "repo_paths"
    gm.write_model(repo, "other", gm.make_tiny_model(), tiny_config("other"))
    # '../repo_paths' and 'other/..' lead back into the repository by a path: still no model
    srv = start_server(repo, "--model-control-mode", "explicit", "--load-model", "other")
    client = srv.client()
    with pytest.raises(InferenceServerException) as ei:
        client.load_model(name, client_timeout=60)
    assert status_name(ei.value) == "NOT_FOUND", ei.value
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("other")
    tiny_ok(client, "other")
    # no phantom entry for the rejected name in the repository index
    assert set(index_by_name(client)) == {"other"}


def test_load_with_a_partial_config_override(start_server, tmp_path):
    """tritonclient's load_model(name, config=...) sends a 'config' parameter: it
    replaces config.pbtxt, and what it leaves out is completed from the model."""
    repo = tmp_path / "repo_params"
    gm.write_model(repo, "m", gm.make_tiny_model(), tiny_config("m"))
    srv = start_server(repo, "--model-control-mode", "explicit")
    client = srv.client()
    client.load_model("m", config='{"max_batch_size": 4}', client_timeout=60)
    config = client.get_model_config("m").config
    assert config.max_batch_size == 4 and [i.name for i in config.input] == ["x"]
    tiny_ok(client, "m")
