"""A sticky device fault through a real server (the simulated device plugin
injects it): the batch fails with the fault, the instance is reported
unhealthy (metric, diagnosis), the model and the server turn not ready
(ModelReady, ServerReady, and the gRPC health service Kubernetes probes)
and not live (ServerLive, the "liveness" health service: only a restart
clears a poisoned device context), and new requests fail at once with
UNAVAILABLE naming the fault, while a CPU model of the same server keeps
serving until then."""

import os

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tritonclient.utils import InferenceServerException

import generate_models as gm
from conftest import tiny_config, wait_for
from e2e_util import make_inputs
from test_metrics import scrape


def test_a_sticky_fault_makes_the_model_and_the_server_not_ready(start_server, tmp_path):
    plugin = os.environ.get("COALESCE_SIMULATED_PLUGIN")
    assert plugin and os.path.isfile(plugin), "COALESCE_SIMULATED_PLUGIN: run through ctest"
    repo = tmp_path / "repo_fault"
    # Graphs off: no batch size is prepared at load, so kernel 0 is the
    # first request's.
    gm.write_model(repo, "faulty", gm.make_tiny_model(),
                   tiny_config("faulty").replace("kind: KIND_CPU", "kind: KIND_GPU")
                   + 'parameters { key: "cuda_graphs" value: { string_value: "false" } }\n')
    gm.write_model(repo, "fine", gm.make_tiny_model(), tiny_config("fine"))
    srv = start_server(repo, env={"COALESCE_DEVICE_PLUGIN": plugin,
                                  "COALESCE_SIMULATED_FAULT": "kernel:0"})
    client = srv.client()
    assert client.is_model_ready("faulty") and client.is_server_ready()
    assert client.is_server_live()
    x = np.ones((1, 4), np.float32)
    with pytest.raises(InferenceServerException, match="simulated sticky device fault"):
        client.infer("faulty", make_inputs(x=x), client_timeout=30)

    assert not client.is_model_ready("faulty")
    assert not client.is_server_ready()
    assert not client.is_server_live()
    with pytest.raises(InferenceServerException) as refused:
        client.infer("faulty", make_inputs(x=x), client_timeout=30)
    assert "StatusCode.UNAVAILABLE" in str(refused.value), refused.value
    assert "model 'faulty' has no healthy instance: instance 0:" in str(refused.value)
    result = client.infer("fine", make_inputs(x=x), client_timeout=30)
    np.testing.assert_array_equal(result.as_numpy("y"), x * 2 + 1)

    channel = grpc.insecure_channel(srv.url)
    health = health_pb2_grpc.HealthStub(channel)

    def not_serving():
        reply = health.Check(health_pb2.HealthCheckRequest(
            service="inference.GRPCInferenceService"), timeout=5)
        return reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
    wait_for(not_serving, 10, 0.1, "the readiness probe to fail")
    # The health watch sets readiness and liveness together.
    live = health.Check(health_pb2.HealthCheckRequest(service="liveness"), timeout=5)
    assert live.status == health_pb2.HealthCheckResponse.NOT_SERVING
    channel.close()

    _, samples = scrape(srv.metrics_url)
    healthy = {dict(labels)["model"]: v for (name, labels), v in samples.items()
               if name == "coalesce_instance_healthy"}
    assert healthy == {"faulty": 0, "fine": 1}, healthy
