"""The layering checker finds what it must.

Small trees: each rule kept, and each broken once. The real tree: copied
with docs/layers.json into a temporary root, it passes; with one include (or
one file) planted, it fails naming that include.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKER = ROOT / "tests" / "layering" / "check_layering.py"
FOLDERS = ("base", "kernels", "engine", "batching", "proto", "server", "tools", "tests", "benchmarks")


def run_checker(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECKER), "--root", str(root)],
                          capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    (root / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "layers.json", root / "docs" / "layers.json")
    for folder in FOLDERS:
        shutil.copytree(ROOT / folder, root / folder,
                        ignore=shutil.ignore_patterns("*.py", "*.onnx", "*.pb", "*.bin", "*.json"))
    return root


def test_the_real_tree_passes(tree):
    result = run_checker(tree)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("path, include, why", [
    ("tools/planted.cc", "tests/conformance/conformance_util.h", "a tool using test code"),
    ("tools/planted.cc", "server/model_manager.h", "a tool using the server"),
    ("engine/device/planted.cc", "engine/model.h", "the device layer using the CPU engine"),
    ("engine/planted.cc", "engine/device/device.h", "the engine using the device layer"),
    ("batching/planted.cc", "engine/cpu_executor.h", "the batcher using an engine implementation"),
    ("batching/planted.cc", "grpcpp/grpcpp.h", "gRPC below the server"),
    ("engine/planted.cc", "cuda_runtime.h", "CUDA outside the cuda layers"),
    ("benchmarks/coalesce_bench/planted.cc", "engine/model.h", "the load tester using the engine"),
    ("kernels/cpu/planted.cc", "engine/shape.h", "a kernel using the engine"),
])
def test_a_planted_leak_fails(tree, path, include, why):
    planted = tree / path
    planted.write_text(f'#include "{include}"\n')
    try:
        result = run_checker(tree)
    finally:
        planted.unlink()
    assert result.returncode == 1, f"{why} passed:\n{result.stdout}"
    assert f"{path}: includes {include}" in result.stdout


def test_a_file_in_no_layer_fails(tree):
    planted = tree / "engine" / "planted.h"
    layers = tree / "docs" / "layers.json"
    original = layers.read_text()
    layers.write_text(original.replace('"paths": ["engine/*"]', '"paths": ["engine/*.cc"]'))
    planted.write_text("// a header nobody placed\n")
    try:
        result = run_checker(tree)
    finally:
        planted.unlink()
        layers.write_text(original)
    assert result.returncode == 1
    assert "engine/planted.h: in no layer of docs/layers.json" in result.stdout


def run_small_tree(tree: dict, tmp_path: Path) -> tuple[int, str]:
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "layers.json", tmp_path / "docs" / "layers.json")
    for rel, text in tree.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    done = run_checker(tmp_path)
    return done.returncode, done.stdout


def test_allowed_includes_pass(tmp_path):
    rc, out = run_small_tree({
        "batching/b.cc": '#include "engine/executor.h"\n#include "batching/b.h"\n',
        "engine/device/d.cc": '#include "engine/event.h"\n',
        "engine/cuda/c.cc": '#include "engine/device/device.h"\n#include <cuda_runtime_api.h>\n',
        "server/s.cc": '#include "engine/model.h"\n#include <grpcpp/grpcpp.h>\n',
        "batching/x_test.cc": '#include "engine/device/simulated_device.h"\n',
        "kernels/cpu/h.h": '#include "kernels/cuda/half_math.h"\n',  # host-device math
        "engine/device/h.cc": '#include "kernels/cuda/half_math.h"\n',
        "tools/t.cc": '#include "engine/device/gpu_instance.h"\n',
        "benchmarks/coalesce_bench/c.cc": '#include "batching/clock.h"\n',
    }, tmp_path)
    assert rc == 0, out


def test_each_violation_is_reported(tmp_path):
    rc, out = run_small_tree({
        "batching/b.cc": '#include "engine/model.h"\n',            # engine implementation
        "engine/executor.h": '#include "engine/model.h"\n',        # API pulls implementation
        "engine/model.cc": '#include "batching/b.h"\n',            # upward
        "engine/ops/o.cc": '#include "engine/device/device.h"\n',  # core into device layer
        "kernels/cpu/k.cc": '#include "engine/shape.h"\n',         # upward
        "engine/graph.cc": '#include <grpcpp/grpcpp.h>\n',         # gRPC below server
        "batching/q.cc": '#include <cuda_runtime_api.h>\n',        # CUDA outside cuda/
        "engine/device/k.cc": '#include "kernels/cuda/half.h"\n',  # a CUDA launcher
        "tools/t.cc": '#include "tests/cpp/server_process.h"\n',  # a tool using tests/
    }, tmp_path)
    assert rc == 1, out
    for src in ("batching/b.cc", "engine/executor.h", "engine/model.cc", "engine/ops/o.cc",
                "kernels/cpu/k.cc", "engine/graph.cc", "batching/q.cc", "engine/device/k.cc",
                "tools/t.cc"):
        assert f"{src}: includes" in out, (src, out)
    assert "9 violations" in out, out
