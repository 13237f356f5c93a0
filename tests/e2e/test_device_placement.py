"""instance_group.kind: KIND_GPU is refused with the CUDA plugin's own reason
on a machine without a GPU (and serves on one), KIND_AUTO falls back to the
CPU and says why.

COALESCE_CUDA_PLUGIN (set by CMake) is the plugin's path when the build made
it, empty when the CUDA toolkit was not found. With the plugin built, the
refusal must come from the loaded plugin reporting what the CUDA runtime said,
which proves on every run that the plugin is found, loads and resolves its
symbols. On a machine with a working GPU the model loads and its outputs
are checked instead.
"""

import os
import re

import numpy as np
import pytest

import generate_models as gm
from conftest import tiny_config
from e2e_util import make_inputs

PLUGIN = os.environ.get("COALESCE_CUDA_PLUGIN")


def with_kind(name: str, kind: str) -> str:
    return tiny_config(name).replace("kind: KIND_CPU", f"kind: {kind}")


@pytest.fixture
def placement_repo(tmp_path):
    repo = tmp_path / "repo_placement"
    gm.write_model(repo, "on_gpu", gm.make_tiny_model(), with_kind("on_gpu", "KIND_GPU"))
    gm.write_model(repo, "on_auto", gm.make_tiny_model(), with_kind("on_auto", "KIND_AUTO"))
    gm.write_model(repo, "on_cpu", gm.make_tiny_model(), tiny_config("on_cpu"))
    return repo


def test_plugin_path_is_known():
    assert PLUGIN is not None, "COALESCE_CUDA_PLUGIN is not set: run through ctest"
    if PLUGIN:
        assert os.path.isfile(PLUGIN), f"CMake built the plugin at {PLUGIN}, but it is not there"


def test_kind_gpu_is_refused_with_the_plugins_reason(start_server, placement_repo):
    srv = start_server(placement_repo)
    client = srv.client()
    index = {m.name: m for m in client.get_model_repository_index().models}
    assert index["on_cpu"].state == "READY", index["on_cpu"]
    gpu = index["on_gpu"]
    if gpu.state == "READY":  # a machine with a working GPU
        assert PLUGIN, "a GPU model is READY without the CUDA plugin"
        x = np.arange(8, dtype=np.float32).reshape(2, 4)
        result = client.infer("on_gpu", make_inputs(x=x), client_timeout=30)
        np.testing.assert_allclose(result.as_numpy("y"), x * 2 + 1, rtol=1e-6)
        return
    assert gpu.state == "UNAVAILABLE", gpu
    assert "instance_group 'on_gpu_0' (KIND_GPU)" in gpu.reason, gpu.reason
    if not PLUGIN:
        assert "no device plugin at" in gpu.reason, gpu.reason
    else:
        # The CUDA runtime's own words, reached through the loaded plugin.
        assert re.search(r"no (usable )?CUDA device \(CUDA runtime \d+\.\d+", gpu.reason), gpu.reason
        assert "cudaError" in gpu.reason or "no CUDA device" in gpu.reason, gpu.reason


def test_kind_auto_falls_back_to_cpu_and_says_why(start_server, placement_repo):
    srv = start_server(placement_repo)
    client = srv.client()
    assert client.is_model_ready("on_auto")
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    result = client.infer("on_auto", make_inputs(x=x), client_timeout=30)
    np.testing.assert_array_equal(result.as_numpy("y"), x * 2 + 1)
    config = client.get_model_config("on_auto").config
    assert [g.kind for g in config.instance_group] == [2], config.instance_group  # KIND_CPU
    log = srv.log()
    assert "instance_group 'on_auto_0' is KIND_AUTO; using the CPU" in log, log[-2000:]


def test_no_instance_group_means_one_instance_per_gpu_else_the_cpu(start_server, tmp_path):
    """Triton's default for a config without instance_group: one instance
    on each visible GPU (two simulated ones here) when there are GPUs, else
    one on the CPU with a log line saying why, so a Triton repository moved
    to a GPU machine runs on its GPUs."""
    from test_metrics import scrape
    repo = tmp_path / "repo_default"
    config = "\n".join(l for l in tiny_config("plain").splitlines()
                       if not l.startswith("instance_group"))
    gm.write_model(repo, "plain", gm.make_tiny_model(), config + "\n")
    x = np.arange(8, dtype=np.float32).reshape(2, 4)

    cpu = start_server(repo)
    client = cpu.client()
    result = client.infer("plain", make_inputs(x=x), client_timeout=30)
    np.testing.assert_array_equal(result.as_numpy("y"), x * 2 + 1)
    kinds = [g.kind for g in client.get_model_config("plain").config.instance_group]
    if kinds != [1]:  # not a machine with a working GPU
        assert kinds == [2], kinds  # KIND_CPU
        assert "instance_group 'plain_0' is KIND_AUTO; using the CPU" in cpu.log(), cpu.log()[-2000:]

    plugin = os.environ.get("COALESCE_SIMULATED_PLUGIN")
    assert plugin and os.path.isfile(plugin), "COALESCE_SIMULATED_PLUGIN: run through ctest"
    gpus = start_server(repo, env={"COALESCE_DEVICE_PLUGIN": plugin,
                                   "COALESCE_SIMULATED_DEVICES": "2"})
    client = gpus.client()
    config = client.get_model_config("plain").config
    assert [(g.kind, g.count) for g in config.instance_group] == [(1, 1)], config  # KIND_GPU
    for _ in range(4):
        result = client.infer("plain", make_inputs(x=x), client_timeout=30)
        np.testing.assert_allclose(result.as_numpy("y"), x * 2 + 1, rtol=1e-6)
    _, samples = scrape(gpus.metrics_url)
    instances = {dict(labels).get("model_instance") for (name, labels) in samples
                 if name == "coalesce_instance_state_seconds_total"
                 and dict(labels).get("model") == "plain"}
    assert instances == {"0", "1"}, instances


def test_instances_on_one_gpu_share_its_weights(start_server, tmp_path):
    """Two KIND_GPU instances on one (simulated) GPU: one device context and
    one copy of the weights (the load log says so), and both serve right
    under concurrent requests."""
    import concurrent.futures
    plugin = os.environ.get("COALESCE_SIMULATED_PLUGIN")
    assert plugin and os.path.isfile(plugin), "COALESCE_SIMULATED_PLUGIN: run through ctest"
    repo = tmp_path / "repo_shared"
    config = tiny_config("shared", instances=2).replace("kind: KIND_CPU", "kind: KIND_GPU")
    gm.write_model(repo, "shared", gm.make_tiny_model(), config)
    srv = start_server(repo, env={"COALESCE_DEVICE_PLUGIN": plugin,
                                  "COALESCE_SIMULATED_DEVICES": "1"})
    line = next(l for l in srv.log().splitlines() if "GPU instance(s)" in l)
    assert "2 GPU instance(s)" in line and "held once for the GPU's instances" in line, line

    def infer(i):
        x = np.full((1, 4), float(i), np.float32)
        result = srv.client().infer("shared", make_inputs(x=x), client_timeout=30)
        return np.array_equal(result.as_numpy("y"), x * 2 + 1)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert all(pool.map(infer, range(64)))
