#!/usr/bin/env python3
"""The GPU benchmark, run by scripts/gpu-check inside an unpacked bundle.

1. Engine only: the MLP example (1024-2048-2048-1000) and a dense model with
   4096-wide layers (4096-4096-4096-4096-1000, Relu, Softmax) at batch
   1..512 through `coalesce-onnx-run --device gpu` (one GPU instance built as
   the server builds it; each run host to host: inputs copied in, computed,
   outputs copied out, timed with steady_clock, median of --repeat runs after
   --warmup). The first run's outputs are checked against onnxruntime (CPU)
   when it is installed. Beside it, when PyTorch with CUDA is installed, the
   same model in PyTorch on the same GPU, FP32 with TF32 off, also host to
   host (pinned input copied in, forward, output copied back, synchronized):
   eager, and replaying a CUDA graph captured per batch size.
2. Server end to end: coalesce-server with mlp_classifier on KIND_GPU in four
   configurations (dynamic batching on/off x double buffering on/off),
   coalesce-bench closed loop at concurrency 1, 16, 64 and 256 each, with
   the GPU's busy fraction over each level sampled by nvidia-smi (NVML's
   utilization.gpu, every 100 ms).

Writes the tables as Markdown to --out (default ./gpu-bench.md) and prints
them. Exit 0 when every run succeeded and every checked output matched, 1
otherwise.

Usage: python3 gpu_bench.py [--bundle DIR] [--out FILE] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BATCHES = [1, 8, 32, 128, 512]
CONCURRENCY = [1, 16, 64, 256]


def dense_model(widths: list[int], seed: int = 0) -> onnx.ModelProto:
    """Gemm (transB, as PyTorch exports Linear) + Relu per layer, Softmax last."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    x = "input"
    for i, (fan_in, fan_out) in enumerate(zip(widths, widths[1:])):
        w = (rng.standard_normal((fan_out, fan_in)) / np.sqrt(fan_in)).astype(np.float32)
        b = (0.01 * rng.standard_normal(fan_out)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        y = f"h{i}"
        nodes.append(helper.make_node("Gemm", [x, f"w{i}", f"b{i}"], [y], transB=1))
        if i < len(widths) - 2:
            nodes.append(helper.make_node("Relu", [y], [y + "_relu"]))
            y += "_relu"
        x = y
    nodes.append(helper.make_node("Softmax", [x], ["probabilities"], axis=-1))
    graph = helper.make_graph(
        nodes, "dense",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", widths[0]])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", widths[-1]])],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# -- engine only ------------------------------------------------------------

def cell(text: str) -> str:
    """`text` fit for one Markdown table cell."""
    return " ".join(text.split()).replace("|", "/")[-300:]


def run_coalesce(bundle: Path, model: Path, x: np.ndarray, work: Path, repeat: int,
                 warmup: int) -> tuple[float, np.ndarray]:
    (work / "x.pb").write_bytes(numpy_helper.from_array(x, "input").SerializeToString())
    out = work / "out"
    timing = work / "timing.json"
    cmd = [str(bundle / "bin" / "coalesce-onnx-run"), "--device", "gpu", "--model", str(model),
           "--input", f"input={work / 'x.pb'}", "--output-dir", str(out),
           "--warmup", str(warmup), "--repeat", str(repeat), "--timing-json", str(timing)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    y = numpy_helper.to_array(onnx.load_tensor(str(out / "probabilities.pb")))
    return json.loads(timing.read_text())["median_ms"], y


def onnxruntime_reference(model: Path, x: np.ndarray):
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return sess.run(None, {"input": x})[0]


class TorchModel:
    """The dense ONNX model's Gemm/Relu/Softmax chain in PyTorch on the GPU."""

    def __init__(self, model: onnx.ModelProto):
        import torch
        self.torch = torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        inits = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()).cuda()
                 for t in model.graph.initializer}
        self.steps = []
        for node in model.graph.node:
            if node.op_type == "Gemm":
                self.steps.append(("gemm", inits[node.input[1]], inits[node.input[2]]))
            elif node.op_type == "Relu":
                self.steps.append(("relu",))
            elif node.op_type == "Softmax":
                self.steps.append(("softmax",))
            else:
                raise ValueError(f"no PyTorch mapping for {node.op_type}")

    def forward(self, x):
        F = self.torch.nn.functional
        for step in self.steps:
            if step[0] == "gemm":
                x = F.linear(x, step[1], step[2])
            elif step[0] == "relu":
                x = F.relu(x)
            else:
                x = F.softmax(x, dim=-1)
        return x

    def time_ms(self, x_host: np.ndarray, repeat: int, warmup: int, graph: bool) -> float:
        torch = self.torch
        pinned_in = torch.from_numpy(x_host).pin_memory()
        with torch.inference_mode():
            static_in = torch.empty(x_host.shape, device="cuda")
            out_shape = self.forward(static_in).shape
            pinned_out = torch.empty(out_shape).pin_memory()
            g = None
            if graph:
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    for _ in range(3):
                        self.forward(static_in)
                torch.cuda.current_stream().wait_stream(stream)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    static_out = self.forward(static_in)

            def once():
                static_in.copy_(pinned_in, non_blocking=True)
                if g is not None:
                    g.replay()
                    out = static_out
                else:
                    out = self.forward(static_in)
                pinned_out.copy_(out, non_blocking=True)
                torch.cuda.synchronize()

            for _ in range(warmup):
                once()
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                once()
                times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)


def torch_available() -> str:
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "PyTorch has no CUDA device"
    return ""


def engine_section(bundle: Path, models: dict[str, Path], work: Path, quick: bool) -> tuple[str, bool]:
    repeat, warmup = (20, 5) if quick else (100, 20)
    why_no_torch = torch_available()
    lines = [f"Median of {repeat} host-to-host runs after {warmup} warm-up runs, FP32 "
             "(TF32 off on both sides). Ratio: PyTorch ms / Coalesce ms (above 1: Coalesce is faster).",
             ""]
    if why_no_torch:
        lines += [f"PyTorch columns empty: {why_no_torch}.", ""]
    lines += ["| model | batch | Coalesce ms | PyTorch eager ms | ratio | PyTorch CUDA graph ms | ratio | max abs diff vs onnxruntime |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    ok = True
    rng = np.random.default_rng(1)
    for name, path in models.items():
        proto = onnx.load(str(path))
        torch_model = None if why_no_torch else TorchModel(proto)
        width = proto.graph.input[0].type.tensor_type.shape.dim[1].dim_value
        for batch in BATCHES:
            x = rng.standard_normal((batch, width)).astype(np.float32)
            try:
                ours, y = run_coalesce(bundle, path, x, work, repeat, warmup)
            except Exception as e:  # noqa: BLE001 - reported in the table
                lines.append(f"| {name} | {batch} | FAILED: {cell(str(e))} | | | | | |")
                ok = False
                continue
            ref = onnxruntime_reference(path, x)
            diff = "onnxruntime not installed"
            if ref is not None:
                d = float(np.max(np.abs(y - ref)))
                diff = f"{d:.2e}"
                if not d <= 1e-4:
                    ok = False
                    diff += " (FAILED: above 1e-4)"
            eager = graph = ""
            r_eager = r_graph = ""
            if torch_model is not None:
                e = torch_model.time_ms(x, repeat, warmup, graph=False)
                g = torch_model.time_ms(x, repeat, warmup, graph=True)
                eager, graph = f"{e:.3f}", f"{g:.3f}"
                r_eager, r_graph = f"{e / ours:.2f}x", f"{g / ours:.2f}x"
            lines.append(f"| {name} | {batch} | {ours:.3f} | {eager} | {r_eager} | {graph} | {r_graph} | {diff} |")
    return "\n".join(lines), ok


# -- server end to end ---------------------------------------------------------

class GpuSampler:
    """utilization.gpu from nvidia-smi every 100 ms while running."""

    def __init__(self):
        self.samples: list[float] = []
        self.proc = None
        self.thread = None

    def start(self):
        self.samples = []
        if shutil.which("nvidia-smi") is None:
            return
        self.proc = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
             "-lms", "100", "-i", "0"], stdout=subprocess.PIPE, text=True)

        def read():
            for line in self.proc.stdout:
                try:
                    self.samples.append(float(line.strip()))
                except ValueError:
                    pass
        self.thread = threading.Thread(target=read, daemon=True)
        self.thread.start()

    def stop(self) -> str:
        if self.proc is None:
            return "n/a"
        self.proc.terminate()
        self.proc.wait()
        self.thread.join(timeout=5)
        return f"{statistics.mean(self.samples):.0f}%" if self.samples else "n/a"


def write_variant(repo: Path, source: Path, name: str, batching: bool, double_buffering: bool):
    d = repo / name / "1"
    d.mkdir(parents=True)
    shutil.copy(source / "1" / "model.onnx", d / "model.onnx")
    config = (source / "config.pbtxt").read_text()
    config = re.sub(r'^name: .*$', f'name: "{name}"', config, flags=re.M)
    config = config.replace("KIND_CPU", "KIND_GPU")
    if not batching:
        config = re.sub(r"dynamic_batching \{.*?\n\}", "", config, flags=re.S)
    config += ('\nparameters: { key: "double_buffering" value: { string_value: "%s" } }\n'
               % ("true" if double_buffering else "false"))
    (repo / name / "config.pbtxt").write_text(config)


def server_section(bundle: Path, mlp_dir: Path, work: Path, quick: bool) -> tuple[str, bool]:
    repo = work / "repo"
    variants = {}
    for batching in (True, False):
        for db in (True, False):
            name = f"mlp_b{int(batching)}_d{int(db)}"
            write_variant(repo, mlp_dir, name, batching, db)
            variants[name] = (batching, db)
    log = open(work / "server.log", "w")
    server = subprocess.Popen([str(bundle / "bin" / "coalesce-server"), "--model-repository", str(repo),
                               "--grpc-address", "127.0.0.1", "--grpc-port", "18001"],
                              stdout=log, stderr=subprocess.STDOUT)
    ok = True
    lines = ["coalesce-bench closed loop, batch 1 per request, mlp_classifier on KIND_GPU "
             "(max_batch_size 64). GPU busy: mean of nvidia-smi utilization.gpu over the level.", "",
             "| batching | double buffering | concurrency | infer/s | p50 ms | p99 ms | avg batch | GPU busy |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    try:
        for _ in range(600):
            if " ready" in (work / "server.log").read_text() or server.poll() is not None:
                break
            time.sleep(0.2)
        text = (work / "server.log").read_text()
        if server.poll() is not None or " ready" not in text:
            return f"The server did not start:\n\n```\n{text[-3000:]}\n```", False
        sampler = GpuSampler()
        window = "1000" if quick else "2000"
        for name, (batching, db) in variants.items():
            for conc in CONCURRENCY:
                prefix = work / f"{name}_c{conc}"
                sampler.start()
                proc = subprocess.run(
                    [str(bundle / "bin" / "coalesce-bench"), "-m", name, "-u", "127.0.0.1:18001",
                     "--concurrency-range", str(conc), "--window-ms", window, "--max-windows", "5",
                     "--output", str(prefix)], capture_output=True, text=True, timeout=300)
                busy = sampler.stop()
                if proc.returncode != 0:
                    lines.append(f"| {batching} | {db} | {conc} | FAILED: {cell(proc.stderr)} | | | | |")
                    ok = False
                    continue
                s = json.loads(prefix.with_suffix(".json").read_text())["levels"][0]["summary"]
                lat = s.get("latency_ms") or {}
                batch = (s.get("server") or {}).get("avg_batch_size")
                if s.get("error_count"):
                    ok = False
                lines.append(f"| {batching} | {db} | {conc} | {s['throughput_infer_per_s']:.0f} | "
                             f"{lat.get('p50', 0):.2f} | {lat.get('p99', 0):.2f} | "
                             f"{batch if batch is None else f'{batch:.1f}'} | {busy} |")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    return "\n".join(lines), ok


def main() -> int:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser()
    parser.add_argument("--bundle", type=Path, default=here.parent)
    parser.add_argument("--out", type=Path, default=Path("gpu-bench.md"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-server", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, str(args.bundle / "share" / "generate_models.py"),
                        "--out", str(work / "models"), "--only", "mlp_classifier"],
                       check=True, capture_output=True)
        mlp_dir = work / "models" / "mlp_classifier"
        dense = work / "dense4096.onnx"
        onnx.save(dense_model([4096, 4096, 4096, 4096, 1000]), str(dense))
        models = {"mlp_classifier": mlp_dir / "1" / "model.onnx", "dense4096": dense}
        engine, ok = engine_section(args.bundle, models, work, args.quick)
        report = ["### Engine only: Coalesce against PyTorch on the same GPU", "", engine, ""]
        if not args.skip_server:
            server, server_ok = server_section(args.bundle, mlp_dir, work, args.quick)
            ok = ok and server_ok
            report += ["### Server end to end: batching and double buffering", "", server, ""]
    text = "\n".join(report)
    print(text)
    args.out.write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
