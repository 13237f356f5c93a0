#!/usr/bin/env python3
"""Writes the seed corpus of stream_infer_fuzzer (corpus/stream_infer_fuzzer/).

Each seed is a script in the fuzzer's format (stream_infer_fuzzer.cc): steps
of an op byte and its operands. SEND (op % 4 == 0) is followed by a varint
length and a serialized ModelInferRequest; (op >> 2) % 4 == 1 or 2 sets its
model_name to identity_fp32 or identity_bytes. READ (op % 4 == 1) reads
1 + (op >> 2) % 4 responses; HALF-CLOSE is 2, CANCEL is 3.

The requests are encoded with tritonclient's copy of the KServe protos (the
same wire format as proto/grpc_service.proto).

Usage: python3 tests/fuzz/make_stream_seeds.py
"""
from __future__ import annotations

import struct
from pathlib import Path

from tritonclient.grpc import service_pb2

OUT = Path(__file__).resolve().parent / "corpus" / "stream_infer_fuzzer"
FP32, BYTES = "identity_fp32", "identity_bytes"
HALF_CLOSE, CANCEL = b"\x02", b"\x03"


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def send_bytes(payload: bytes, model_select: int = 0) -> bytes:
    return bytes([model_select << 2]) + varint(len(payload)) + payload


def send(request: service_pb2.ModelInferRequest, model_select: int = 0) -> bytes:
    return send_bytes(request.SerializeToString(), model_select)


def read(count: int) -> bytes:
    assert 1 <= count <= 4
    return bytes([1 | (count - 1) << 2])


def fp32(rid: str, rows: int = 1, typed: bool = False, width: int = 4,
         model: str = FP32) -> service_pb2.ModelInferRequest:
    values = [0.5 * i - 1.0 for i in range(rows * width)]
    request = service_pb2.ModelInferRequest(model_name=model, id=rid)
    tensor = request.inputs.add(name="x", datatype="FP32", shape=[rows, width])
    if typed:
        tensor.contents.fp32_contents.extend(values)
    else:
        request.raw_input_contents.append(struct.pack(f"<{len(values)}f", *values))
    return request


def serialized(strings: list[bytes]) -> bytes:
    return b"".join(struct.pack("<I", len(s)) + s for s in strings)


def text(rid: str, rows: int = 1, typed: bool = False,
         raw: bytes | None = None) -> service_pb2.ModelInferRequest:
    strings = [f"w{i}".encode() for i in range(rows * 2)]
    request = service_pb2.ModelInferRequest(model_name=BYTES, id=rid)
    tensor = request.inputs.add(name="text", datatype="BYTES", shape=[rows, 2])
    if typed:
        tensor.contents.bytes_contents.extend(strings)
    else:
        request.raw_input_contents.append(serialized(strings) if raw is None else raw)
    return request


def seeds() -> dict[str, bytes]:
    no_name = fp32("n0")
    no_name.ClearField("model_name")
    with_timeout = fp32("t0")
    with_timeout.parameters["timeout"].int64_param = 1
    cut = fp32("c0", rows=2).SerializeToString()
    return {
        "fp32_raw_and_typed": send(fp32("r0")) + send(fp32("r1", rows=2, typed=True))
        + HALF_CLOSE,
        "bytes_raw_and_typed": send(text("b0")) + send(text("b1", rows=2, typed=True))
        + HALF_CLOSE,
        "both_models_with_reads": send(fp32("r0")) + send(text("b0")) + read(2)
        + send(no_name, model_select=1) + send(text("b1", rows=3)) + read(1)
        + send(fp32("r2", rows=8)) + HALF_CLOSE,
        "unknown_model": send(fp32("u0", model="no_such_model")) + send(fp32("r0"))
        + HALF_CLOSE,
        "wrong_shape": send(fp32("s0", width=5)) + send(fp32("s1", rows=9))
        + send(text("s2", raw=b"\x09\x00\x00\x00ab")) + send(fp32("r0")) + HALF_CLOSE,
        "malformed_requests": send_bytes(cut[:-5])
        + send_bytes(b"\xff\xff\xff\xff", model_select=2) + send(fp32("r0")),
        "timeout_parameter": send(with_timeout) + send(fp32("r0")) + HALF_CLOSE,
        "cancel_after_2": send(fp32("r0")) + send(text("b0")) + CANCEL,
        "cancel_after_read": send(fp32("r0")) + read(1) + send(fp32("r1"))
        + send(text("b0")) + CANCEL,
        "half_close_after_0": HALF_CLOSE,
        "seventeen_sends": b"".join(send(fp32(f"r{i}")) for i in range(17))
        + read(4) + HALF_CLOSE,
    }


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in seeds().items():
        (OUT / name).write_bytes(data)
        print(f"{OUT / name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
