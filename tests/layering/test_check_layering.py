"""check_layering.py finds what it must: each rule broken once in a small tree."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("check_layering.py")


def run(tree: dict, tmp_path: Path):
    for rel, text in tree.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout


def test_allowed_includes_pass(tmp_path):
    rc, out = run({
        "batching/b.cc": '#include "engine/executor.h"\n#include "batching/b.h"\n',
        "engine/device/d.cc": '#include "engine/event.h"\n',
        "engine/cuda/c.cc": '#include "engine/device/device.h"\n#include <cuda_runtime_api.h>\n',
        "server/s.cc": '#include "engine/model.h"\n#include <grpcpp/grpcpp.h>\n',
        "batching/x_test.cc": '#include "engine/device/simulated_device.h"\n',
        "kernels/cpu/h.h": '#include "kernels/cuda/half_math.h"\n',  # host-device math
        "engine/device/h.cc": '#include "kernels/cuda/half_math.h"\n',
    }, tmp_path)
    assert rc == 0, out


def test_each_violation_is_reported(tmp_path):
    rc, out = run({
        "batching/b.cc": '#include "engine/model.h"\n',            # engine implementation
        "engine/executor.h": '#include "engine/model.h"\n',        # API pulls implementation
        "engine/model.cc": '#include "batching/b.h"\n',            # upward
        "engine/ops/o.cc": '#include "engine/device/device.h"\n',  # core into device layer
        "kernels/cpu/k.cc": '#include "engine/shape.h"\n',         # upward
        "engine/graph.cc": '#include <grpcpp/grpcpp.h>\n',         # gRPC below server
        "batching/q.cc": '#include <cuda_runtime_api.h>\n',        # CUDA outside cuda/
        "engine/device/k.cc": '#include "kernels/cuda/half.h"\n',  # a CUDA launcher
    }, tmp_path)
    assert rc == 1, out
    for src in ("batching/b.cc", "engine/executor.h", "engine/model.cc", "engine/ops/o.cc",
                "kernels/cpu/k.cc", "engine/graph.cc", "batching/q.cc", "engine/device/k.cc"):
        assert f"{src}: includes" in out, (src, out)
    assert "8 violations" in out, out
