"""gRPC server reflection: a generic client (grpcurl, Postman, grpcio-reflection)
can list the services and fetch their descriptors without our .proto files."""

import grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc


def _ask(url, request):
    with grpc.insecure_channel(url) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        responses = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
    assert len(responses) == 1
    return responses[0]


def test_reflection_lists_services(server):
    response = _ask(server.url, reflection_pb2.ServerReflectionRequest(list_services=""))
    names = {s.name for s in response.list_services_response.service}
    assert "inference.GRPCInferenceService" in names
    assert "grpc.health.v1.Health" in names


def test_reflection_serves_the_inference_descriptor(server):
    response = _ask(server.url, reflection_pb2.ServerReflectionRequest(
        file_containing_symbol="inference.GRPCInferenceService"))
    files = response.file_descriptor_response.file_descriptor_proto
    assert files, response
