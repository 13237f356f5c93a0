"""Our .proto files against the descriptors that Triton's own Python client
(tritonclient, from PyPI) ships: every field we declare must have the same
number, type and cardinality as Triton's, and every RPC of Triton's service
must exist with the same request/response types and streaming."""

import shutil
import subprocess
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool
from tritonclient.grpc import model_config_pb2 as triton_config
from tritonclient.grpc import service_pb2 as triton_service

PROTO_DIR = Path(__file__).resolve().parents[2] / "proto"


def our_pool(tmp_path):
    protoc = shutil.which("protoc")
    if protoc is None:
        pytest.fail("protoc not found (Debian package protobuf-compiler)")
    out = tmp_path / "descriptors.pb"
    subprocess.run([protoc, f"-I{PROTO_DIR}", "--include_imports",
                    f"--descriptor_set_out={out}", "grpc_service.proto"],
                   check=True)
    files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    return pool


def fields(desc, path, out, depth=0):
    for f in desc.fields:
        key = f"{path}.{f.name}"
        out[key] = (f.number, f.type, f.is_repeated if hasattr(f, "is_repeated") else f.label)
        sub = f.message_type
        if sub is None or depth > 5:
            continue
        if sub.GetOptions().map_entry:
            value = sub.fields_by_name["value"]
            out[key + "{key}"] = sub.fields_by_name["key"].type
            if value.message_type is not None:
                fields(value.message_type, key + "{}", out, depth + 1)
        elif sub.full_name.startswith("inference."):
            fields(sub, key, out, depth + 1)
    return out


# Fields Triton renamed after the tritonclient pinned here was released (same
# number and type): ours carry the current name.
RENAMED_SINCE_THE_CLIENT = {
    "ensemble_scheduling.max_inflight_requests": "ensemble_scheduling.max_inflight_responses",
}


def renamed_since_the_client(theirs: dict) -> dict:
    out = {}
    for key, value in theirs.items():
        for old, new in RENAMED_SINCE_THE_CLIENT.items():
            if key.endswith(old):
                key = key[: -len(old)] + new
        out[key] = value
    return out


def test_every_declared_field_matches_triton(tmp_path):
    pool = our_pool(tmp_path)
    ours, theirs = {}, {}
    for name in triton_service.DESCRIPTOR.message_types_by_name:
        try:
            mine = pool.FindMessageTypeByName(f"inference.{name}")
        except KeyError:
            pytest.fail(f"message {name} is missing")
        fields(mine, name, ours)
        fields(triton_service.DESCRIPTOR.message_types_by_name[name], name, theirs)
    fields(pool.FindMessageTypeByName("inference.ModelConfig"), "ModelConfig", ours)
    fields(triton_config.ModelConfig.DESCRIPTOR, "ModelConfig", theirs)
    assert len(ours) > 200
    theirs = renamed_since_the_client(theirs)
    mismatches = {k: (v, theirs.get(k)) for k, v in ours.items() if theirs.get(k) != v}
    assert mismatches == {}


def test_every_triton_model_config_field_is_declared(tmp_path):
    """The whole of Triton's ModelConfig, so that any Triton config parses."""
    pool = our_pool(tmp_path)
    ours, theirs = {}, {}
    fields(pool.FindMessageTypeByName("inference.ModelConfig"), "ModelConfig", ours)
    fields(triton_config.ModelConfig.DESCRIPTOR, "ModelConfig", theirs)
    missing = sorted(k for k in renamed_since_the_client(theirs) if k not in ours)
    assert missing == []


def test_every_triton_rpc_exists_with_the_same_signature(tmp_path):
    pool = our_pool(tmp_path)
    mine = pool.FindServiceByName("inference.GRPCInferenceService")
    theirs = triton_service.DESCRIPTOR.services_by_name["GRPCInferenceService"]
    for m in theirs.methods:
        ours = mine.methods_by_name.get(m.name)
        assert ours is not None, m.name
        assert (ours.input_type.full_name, ours.output_type.full_name,
                ours.client_streaming, ours.server_streaming) == \
               (m.input_type.full_name, m.output_type.full_name,
                m.client_streaming, m.server_streaming), m.name
