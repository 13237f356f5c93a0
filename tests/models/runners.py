"""Running a model in ONNX Runtime and through coalesce-onnx-run, and comparing
their outputs: shared by tests/ort_compare, tests/e2e/test_model_zoo.py and
benchmarks/engine_vs_onnxruntime.py.

Tolerance (docs/conformance.md, "onnxruntime comparison"): element-wise
``|actual - expected| <= RTOL * |expected| + ATOL_SCALE * max|expected|``,
the atol taken relative to the largest magnitude of that output tensor.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

REPO_ROOT = Path(__file__).resolve().parents[2]

RTOL = 1e-3
# ONNX Runtime against itself (kernels unfused vs. its optimized graph on two
# threads) differs by at most 3e-6 of an output's largest magnitude on the nine
# light nets and the encoders: 1e-4 leaves a 30x margin for another summation
# order, while a wrong kernel shows up at the scale of the output itself.
ATOL_SCALE = 1e-4

RUN_TIMEOUT_S = 600.0


def onnx_run_binary() -> Path:
    """$COALESCE_ONNX_RUN, default <repo>/build/tools/coalesce-onnx-run."""
    env = os.environ.get("COALESCE_ONNX_RUN")
    path = Path(env) if env else REPO_ROOT / "build" / "tools" / "coalesce-onnx-run"
    return path if path.is_absolute() else REPO_ROOT / path


def conformance_data_dir() -> Path:
    """$COALESCE_CONFORMANCE_DATA, default the onnx-conformance folder beside the repository."""
    env = os.environ.get("COALESCE_CONFORMANCE_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "onnx-conformance"


class CoalesceRunError(RuntimeError):
    """coalesce-onnx-run exited with an error; the message holds its stderr
    and the command."""

    def __init__(self, returncode: int, stderr: str, cmd: list):
        self.returncode, self.stderr = returncode, stderr.strip()
        super().__init__(f"coalesce-onnx-run exited with {returncode}:\n{self.stderr}\n"
                         f"command: {' '.join(cmd)}")


@dataclasses.dataclass
class CoalesceRun:
    outputs: dict  # output name -> numpy array
    timing: dict | None  # the --timing-json contents, when timed
    stdout: str
    profile: dict | None = None  # the --profile contents, when profiled


def _write_inputs(feeds: dict, directory: Path) -> list:
    """Each feed as DIR/input_<k>.pb; returns the --input arguments."""
    directory.mkdir(parents=True, exist_ok=True)
    args = []
    for k, (name, value) in enumerate(feeds.items()):
        path = directory / f"input_{k}.pb"
        # np.require keeps rank 0 (np.ascontiguousarray makes scalars 1-D).
        array = np.require(value, requirements="C")
        path.write_bytes(numpy_helper.from_array(array, name).SerializeToString())
        args += ["--input", f"{name}={path}"]
    return args


def _read_outputs(directory: Path) -> dict:
    outputs = {}
    for path in sorted(directory.glob("*.pb")):
        proto = onnx.TensorProto()
        proto.ParseFromString(path.read_bytes())
        outputs[proto.name] = numpy_helper.to_array(proto)
    return outputs


def run_coalesce(model_path: Path, feeds: dict, workdir: Path, threads: int = 1,
                 warmup: int = 0, repeat: int = 0, binary: Path | None = None,
                 graph_optimizations: bool = True, profile: bool = False,
                 device: str = "cpu", extra_args: list | None = None) -> CoalesceRun:
    """Runs coalesce-onnx-run on `model_path` with `feeds` (name -> array),
    files under `workdir`; graph_optimizations=False loads the graph exactly
    as written; profile=True (needs repeat) also profiles the timed runs per
    node; device "gpu" or "simulated" runs the model as a GPU instance (on
    the simulated device: the CUDA kernels' math on the host); extra_args
    go on the command line last. Raises CoalesceRunError when it fails."""
    workdir = Path(workdir)
    out_dir = workdir / "outputs"
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = [str(binary or onnx_run_binary()), "--model", str(model_path),
           *_write_inputs(feeds, workdir / "inputs"), "--output-dir", str(out_dir),
           "--threads", str(threads),
           "--graph-optimizations", "on" if graph_optimizations else "off",
           "--device", device, *(extra_args or [])]
    timing_path = workdir / "timing.json"
    if repeat:
        cmd += ["--warmup", str(warmup), "--repeat", str(repeat), "--timing-json", str(timing_path)]
    profile_path = workdir / "profile.json"
    if profile:
        cmd += ["--profile", str(profile_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise CoalesceRunError(proc.returncode, proc.stderr, cmd)
    timing = json.loads(timing_path.read_text()) if repeat else None
    return CoalesceRun(_read_outputs(out_dir), timing, proc.stdout,
                       json.loads(profile_path.read_text()) if profile else None)


def onnxruntime_session(model, threads: int = 1, optimize: bool = False):
    """A CPU InferenceSession on a model path or ModelProto. optimize=False
    disables every graph optimization (ORT_DISABLE_ALL): each node runs as
    written, which makes it a faithful reference."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    return ort.InferenceSession(source, so, providers=["CPUExecutionProvider"])


def run_onnxruntime(model, feeds: dict, threads: int = 1) -> dict:
    """Output name -> array from the reference (optimizations disabled)."""
    sess = onnxruntime_session(model, threads)
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def compare_outputs(actual: dict, expected: dict, rtol: float = RTOL,
                    atol_scale: float = ATOL_SCALE) -> list:
    """Problems found comparing `actual` with `expected` (empty when they
    match): missing or extra outputs, dtype or shape differences, and for
    each output out of tolerance the count, the worst element and the atol."""
    problems = []
    if set(actual) != set(expected):
        problems.append(f"outputs {sorted(actual)}, expected {sorted(expected)}")
    for name in sorted(set(actual) & set(expected)):
        problem = _compare_one(actual[name], expected[name], rtol, atol_scale)
        if problem:
            problems.append(f"output '{name}': {problem}")
    return problems


def _compare_one(a: np.ndarray, e: np.ndarray, rtol: float, atol_scale: float) -> str | None:
    if a.dtype != e.dtype or a.shape != e.shape:
        return f"{a.dtype} {list(a.shape)}, expected {e.dtype} {list(e.shape)}"
    if e.size == 0:
        return None
    scale = float(np.max(np.abs(e.astype(np.float64))))
    atol = atol_scale * scale
    diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
    allowed = atol + rtol * np.abs(e.astype(np.float64))
    bad = ~(diff <= allowed)  # NaN differences count as bad
    if not bad.any():
        return None
    worst = int(np.argmax(np.where(bad, np.nan_to_num(diff - allowed, nan=np.inf), -np.inf)))
    return (f"{int(bad.sum())} of {e.size} elements differ (rtol {rtol}, atol {atol:.3g} = "
            f"{atol_scale} x max|expected| {scale:.4g}); worst at {np.unravel_index(worst, e.shape)}: "
            f"got {a.ravel()[worst]!r}, expected {e.ravel()[worst]!r}")
