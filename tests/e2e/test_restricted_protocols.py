"""--grpc-restricted-protocol as Triton defines it: a restricted RPC group
answers UNAVAILABLE "This protocol is restricted, expecting header '<key>'"
without the header and its value, serves with them; other groups stay
open; streams are refused the same way."""

from __future__ import annotations

import queue

import numpy as np
import pytest
from tritonclient.utils import InferenceServerException

import generate_models as gm
from conftest import tiny_config
from e2e_util import make_inputs

ADMIN = {"admin-key": "s3cret"}
INFER = {"infer-key": "abc"}


@pytest.fixture
def client(start_server, tmp_path):
    repo = tmp_path / "repo_restricted"
    gm.write_model(repo, "m", gm.make_tiny_model(), tiny_config("m"))
    srv = start_server(repo, "--model-control-mode", "explicit", "--load-model", "m",
                       "--grpc-restricted-protocol", "model-repository,shared-memory:admin-key=s3cret",
                       "--grpc-restricted-protocol", "inference:infer-key=abc")
    return srv.client()


def _refused(call, header):
    with pytest.raises(InferenceServerException) as err:
        call()
    assert err.value.status() == "StatusCode.UNAVAILABLE", err.value
    assert f"This protocol is restricted, expecting header '{header}'" in str(err.value)


def test_restricted_groups_need_their_header(client):
    x = np.ones((1, 4), dtype=np.float32)
    _refused(lambda: client.get_model_repository_index(), "admin-key")
    _refused(lambda: client.unload_model("m", headers={"admin-key": "wrong"}), "admin-key")
    _refused(lambda: client.get_system_shared_memory_status(), "admin-key")
    _refused(lambda: client.infer("m", make_inputs(x=x)), "infer-key")
    _refused(lambda: client.infer("m", make_inputs(x=x), headers=ADMIN), "infer-key")
    assert [m.name for m in client.get_model_repository_index(headers=ADMIN).models] == ["m"]
    np.testing.assert_allclose(client.infer("m", make_inputs(x=x), headers=INFER).as_numpy("y"),
                               x * 2 + 1)
    # Unrestricted groups: health, metadata, config, statistics.
    assert client.is_server_live() and client.is_model_ready("m")
    assert client.get_model_metadata("m").name == "m"
    assert client.get_model_config("m").config.name == "m"
    client.get_inference_statistics("m")


def test_a_stream_without_the_header_is_refused(client):
    x = np.ones((1, 4), dtype=np.float32)
    for headers, expect_ok in ((None, False), (INFER, True)):
        answers: queue.Queue = queue.Queue()
        client.start_stream(callback=lambda result, error: answers.put((result, error)), headers=headers)
        try:
            try:
                client.async_stream_infer("m", make_inputs(x=x))
            except InferenceServerException:
                assert not expect_ok  # the stream already ended with its error
            result, error = answers.get(timeout=30)
        finally:
            client.stop_stream()
        if expect_ok:
            assert error is None, error
            np.testing.assert_allclose(result.as_numpy("y"), x * 2 + 1)
        else:
            assert error is not None
            assert "expecting header 'infer-key'" in str(error)
