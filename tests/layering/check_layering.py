#!/usr/bin/env python3
"""The folder rule, checked on every build: server -> batching -> engine -> kernels.

Every #include "..." of the project's own library sources is checked against
what its folder may use. Tests (*_test.cc) and test fakes may reach further
(a batching test may run the batcher on the simulated device); libraries may
not. Third-party headers are checked too: only server/ (and tools, tests,
benchmarks) may include gRPC, and only engine/cuda/ and kernels/cuda/ CUDA.
The host-device math headers of kernels/cuda/ (no CUDA, nothing to link) are
shared with kernels/cpu/ and engine/device/.

Exit 0 when every include is allowed; 1 with one line per violation.
Usage: python3 tests/layering/check_layering.py [REPO_ROOT]
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

# The coalesce_engine_api target: what batching/ may see of the engine.
ENGINE_API = {
    "engine/arena_planner.h", "engine/neutral_plan.h", "engine/cpu_stream.h", "engine/data_type.h", "engine/event.h",
    "engine/executor.h", "engine/serialized_bytes.h", "engine/shape.h",
    "engine/tensor_spec.h",
}



def in_engine_api(inc: str) -> bool:
    """The engine API headers, and the device-neutral operator schemas
    (engine/schema/), which the device lowering reads."""
    return inc in ENGINE_API or inc.startswith("engine/schema/")


INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
CUDA = re.compile(r"^(cuda|cublas|cudnn|nvml|cuda_runtime)")
GRPC = re.compile(r"^(grpc|grpcpp)/")


def is_test_file(path: str) -> bool:
    name = Path(path).name
    return (name.endswith("_test.cc") or name.startswith("fake_") or "/testing/" in path
            or name.startswith("recording_sink"))


def is_host_device_math(inc: str) -> bool:
    """kernels/cuda/*_math.h and host_device.h: header-only math that compiles
    for the host as well as the GPU and links nothing, so the CPU kernels and
    the device lowering may share it (FP16 conversion, for one)."""
    return inc.startswith("kernels/cuda/") and (inc.endswith("_math.h")
                                                or inc == "kernels/cuda/host_device.h")


def allowed(src: str, inc: str) -> bool:
    """May project file `src` include project header `inc`?"""
    if is_host_device_math(inc) and src.startswith(("kernels/cpu/", "engine/device/")):
        return True
    if in_engine_api(src) or in_engine_api(src.replace(".cc", ".h")):
        return in_engine_api(inc)
    if src.startswith("kernels/cpu/"):
        return inc.startswith("kernels/cpu/")
    if src.startswith("kernels/cuda/"):
        return inc.startswith("kernels/cuda/")
    if src.startswith("engine/device/"):
        return in_engine_api(inc) or inc.startswith("engine/device/")
    if src.startswith("engine/cuda/"):
        return (in_engine_api(inc) or inc.startswith(("engine/device/", "engine/cuda/",
                                                     "kernels/cuda/")))
    if src.startswith("engine/"):
        return (inc.startswith(("engine/", "kernels/cpu/"))
                and not inc.startswith(("engine/device/", "engine/cuda/")))
    if src.startswith("batching/"):
        return inc.startswith("batching/") or in_engine_api(inc)
    if src.startswith("proto/"):
        return inc.startswith("proto/")
    if src.startswith("server/"):
        return inc.startswith(("server/", "batching/", "engine/", "proto/"))
    return True  # tools/, tests/, benchmarks/: end users of every layer


def third_party_allowed(src: str, inc: str) -> bool:
    if CUDA.match(inc):
        return src.startswith(("engine/cuda/", "kernels/cuda/"))
    if GRPC.match(inc):
        return not src.startswith(("kernels/", "engine/", "batching/"))
    return True


def main(root: Path) -> int:
    project_dirs = ("kernels", "engine", "batching", "proto", "server", "tools")
    violations = []
    checked = 0
    for folder in project_dirs:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".h", ".cc", ".cu"):
                continue
            src = path.relative_to(root).as_posix()
            for inc in INCLUDE.findall(path.read_text(errors="replace")):
                checked += 1
                own = inc.split("/")[0] in project_dirs + ("tests", "benchmarks")
                if own and not is_test_file(src) and not allowed(src, inc):
                    violations.append(f"{src}: includes {inc}")
                if not own and not third_party_allowed(src, inc):
                    violations.append(f"{src}: includes {inc} (not allowed in this layer)")
    for v in violations:
        print(v)
    print(f"layering: {checked} includes checked, {len(violations)} violations")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]))
