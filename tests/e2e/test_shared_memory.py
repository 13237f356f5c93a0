"""System shared memory with Triton's client utilities
(tritonclient.utils.shared_memory): register, status, unregister; inputs
read from and outputs written to registered regions; bounds checked with
the tensor named; a region unregistered while in use stays safe."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

import generate_models as gm
from conftest import tiny_config


@pytest.fixture
def served(start_server, tmp_path):
    repo = tmp_path / "repo_shm"
    gm.write_model(repo, "m", gm.make_tiny_model(width=256), tiny_config("m", width=256))
    srv = start_server(repo)
    client = srv.client()
    regions = []

    def region(name: str, byte_size: int):
        handle = shm.create_shared_memory_region(name, f"/coalesce_test_{name}_{id(srv)}", byte_size)
        regions.append(handle)
        return handle

    yield client, region
    client.unregister_system_shared_memory()
    for handle in regions:
        shm.destroy_shared_memory_region(handle)


def test_inputs_and_outputs_in_shared_memory(served):
    client, region = served
    x = np.random.default_rng(1).standard_normal((3, 256)).astype(np.float32)
    in_handle = region("in", x.nbytes)
    out_handle = region("out", x.nbytes + 64)
    shm.set_shared_memory_region(in_handle, [x])
    # Registered with the keys the regions were created with.
    client.register_system_shared_memory("in", in_handle._shm_key, x.nbytes)
    client.register_system_shared_memory("out", out_handle._shm_key, x.nbytes + 64, offset=0)
    status = client.get_system_shared_memory_status(as_json=True)["regions"]
    assert set(status) == {"in", "out"}
    assert int(status["in"]["byte_size"]) == x.nbytes

    inp = grpcclient.InferInput("x", list(x.shape), "FP32")
    inp.set_shared_memory("in", x.nbytes)
    out = grpcclient.InferRequestedOutput("y")
    out.set_shared_memory("out", x.nbytes, offset=64)
    result = client.infer("m", [inp], outputs=[out], client_timeout=30)
    meta = result.get_output("y")
    assert list(meta.shape) == [3, 256] and meta.datatype == "FP32"
    y = shm.get_contents_as_numpy(out_handle, np.float32, [3, 256], offset=64)
    np.testing.assert_allclose(y, x * 2 + 1, rtol=1e-6)
    # The bytes travelled through the region, not the response.
    assert list(result.get_response().raw_output_contents) == [b""]


def test_mixed_raw_and_shared_memory_inputs_and_bounds(served):
    client, region = served
    x = np.ones((2, 256), dtype=np.float32)
    handle = region("small", 512)
    client.register_system_shared_memory("small", handle._shm_key, 512)
    inp = grpcclient.InferInput("x", list(x.shape), "FP32")
    inp.set_shared_memory("small", x.nbytes)  # 2048 bytes from a 512-byte region
    with pytest.raises(InferenceServerException, match="input 'x': offset 0 \\+ byte_size 2048 lies outside shared memory region 'small'"):
        client.infer("m", [inp], client_timeout=30)
    inp.set_shared_memory("nope", 16)
    with pytest.raises(InferenceServerException, match="input 'x': no shared memory region named 'nope'"):
        client.infer("m", [inp], client_timeout=30)
    # An output larger than its span fails the request and names both.
    inp = grpcclient.InferInput("x", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    out = grpcclient.InferRequestedOutput("y")
    out.set_shared_memory("small", 512)
    with pytest.raises(InferenceServerException, match="output 'y': 2048 bytes do not fit its shared memory span of 512"):
        client.infer("m", [inp], outputs=[out], client_timeout=30)


def test_register_errors_and_unregister(served):
    client, region = served
    handle = region("r", 1024)
    client.register_system_shared_memory("r", handle._shm_key, 1024)
    with pytest.raises(InferenceServerException, match="already registered"):
        client.register_system_shared_memory("r", handle._shm_key, 1024)
    with pytest.raises(InferenceServerException, match="exceeds the object's 1024 bytes"):
        client.register_system_shared_memory("big", handle._shm_key, 4096)
    with pytest.raises(InferenceServerException, match="cannot open"):
        client.register_system_shared_memory("missing", "/coalesce_no_such_key", 16)
    with pytest.raises(InferenceServerException, match="no shared memory region named 'zzz'"):
        client.get_system_shared_memory_status("zzz")
    client.unregister_system_shared_memory("r")
    assert client.get_system_shared_memory_status(as_json=True).get("regions", {}) == {}
    client.unregister_system_shared_memory("r")  # unknown: not an error


def test_cuda_shared_memory_clean_up_then_a_refusal_in_tritons_words(served):
    """Triton's shared-memory client examples begin by unregistering every
    system and CUDA region; both must succeed with nothing registered. On a
    machine without a usable GPU, registering a CUDA region is refused as
    Triton refuses it there; with one, the server says it cannot open CUDA
    handle that is not one fails to open (docs/server.md)."""
    client, _ = served
    client.unregister_system_shared_memory()
    client.unregister_cuda_shared_memory()
    client.unregister_cuda_shared_memory("never_registered")
    assert client.get_cuda_shared_memory_status(as_json=True).get("regions", {}) == {}
    with pytest.raises(InferenceServerException,
                       match="no CUDA shared memory region named 'zzz'"):
        client.get_cuda_shared_memory_status("zzz")
    with pytest.raises(InferenceServerException) as refused:
        client.register_cuda_shared_memory("input_data", b"\0" * 64, 0, 64)
    message = str(refused.value)
    assert ("failed to register CUDA shared memory region: 'input_data', GPUs not supported"
            in message or "failed to register CUDA shared memory region: 'input_data':"
            in message), message


def test_cuda_shared_memory_through_the_device_plugin(start_server, tmp_path):
    """Triton's CUDA shared memory protocol end to end, with tritonclient,
    on the simulated device plugin: its "IPC handle" names a POSIX shared
    memory object (tests/simulated_plugin), which this test fills and reads
    with tritonclient's system shared memory utilities. Register, status,
    an input read from a CUDA region and an output written to one, bounds,
    unregister; a system region may not take a CUDA region's name. A CPU
    instance reads and writes the regions through host memory; a GPU
    instance (of the simulated device) copies device to device, so the
    plugin's log of host copies stays empty for it (zero copy)."""
    import base64
    import os
    plugin = os.environ.get("COALESCE_SIMULATED_PLUGIN")
    assert plugin and os.path.isfile(plugin), "COALESCE_SIMULATED_PLUGIN: run through ctest"
    repo = tmp_path / "repo_cudashm"
    gm.write_model(repo, "m", gm.make_tiny_model(width=16), tiny_config("m", width=16))
    gm.write_model(repo, "m_gpu", gm.make_tiny_model(width=16),
                   tiny_config("m_gpu", width=16).replace("KIND_CPU", "KIND_GPU"))
    host_copies = tmp_path / "ipc_host_copies.log"
    srv = start_server(repo, env={"COALESCE_DEVICE_PLUGIN": plugin,
                                  "COALESCE_SIMULATED_IPC_LOG": str(host_copies)})
    client = srv.client()
    x = np.arange(32, dtype=np.float32).reshape(2, 16)
    key_in, key_out = f"/coalesce_cudashm_in_{os.getpid()}", f"/coalesce_cudashm_out_{os.getpid()}"
    h_in = shm.create_shared_memory_region("in", key_in, x.nbytes)
    h_out = shm.create_shared_memory_region("out", key_out, x.nbytes)
    try:
        shm.set_shared_memory_region(h_in, [x])
        for name, key in (("cuda_in", key_in), ("cuda_out", key_out)):
            handle = base64.b64encode(b"coalesce-simulated-ipc:" + key.encode())
            client.register_cuda_shared_memory(name, handle, 0, x.nbytes)
        status = client.get_cuda_shared_memory_status(as_json=True)["regions"]
        assert status["cuda_in"]["byte_size"] == str(x.nbytes), status
        with pytest.raises(InferenceServerException, match="already registered"):
            client.register_system_shared_memory("cuda_in", key_in, x.nbytes)

        inputs = [grpcclient.InferInput("x", list(x.shape), "FP32")]
        inputs[0].set_shared_memory("cuda_in", x.nbytes)
        outputs = [grpcclient.InferRequestedOutput("y")]
        outputs[0].set_shared_memory("cuda_out", x.nbytes)
        result = client.infer("m", inputs, outputs=outputs, client_timeout=30)
        # The bytes travelled through the region, not the response.
        assert list(result.get_response().raw_output_contents) == [b""]
        y = shm.get_contents_as_numpy(h_out, np.float32, list(x.shape))
        np.testing.assert_array_equal(y, x * 2 + 1)
        assert host_copies.read_text().split("\n")[:2] == [f"read {x.nbytes}",
                                                          f"write {x.nbytes}"]
        host_copies.unlink()

        shm.set_shared_memory_region(h_out, [np.zeros_like(x)])
        result = client.infer("m_gpu", inputs, outputs=outputs, client_timeout=30)
        assert list(result.get_response().raw_output_contents) == [b""]
        y = shm.get_contents_as_numpy(h_out, np.float32, list(x.shape))
        np.testing.assert_array_equal(y, x * 2 + 1)
        assert not host_copies.exists(), host_copies.read_text()

        inputs[0].set_shared_memory("cuda_in", x.nbytes, offset=8)
        with pytest.raises(InferenceServerException, match="input 'x'.*outside CUDA shared"):
            client.infer("m", inputs, outputs=outputs, client_timeout=30)
        with pytest.raises(InferenceServerException, match="'bad'.*not a simulated IPC handle"):
            client.register_cuda_shared_memory("bad", base64.b64encode(b"x" * 64), 0, 64)
        client.unregister_cuda_shared_memory("cuda_in")
        assert set(client.get_cuda_shared_memory_status(as_json=True)["regions"]) == {"cuda_out"}
    finally:
        client.unregister_cuda_shared_memory()
        shm.destroy_shared_memory_region(h_in)
        shm.destroy_shared_memory_region(h_out)
