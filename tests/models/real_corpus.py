"""The corpus of real exports in tests/models/real/ (written by
export_real.py): its manifest, its committed onnxruntime outputs, the
known_refusals.txt list, and the comparison every suite that runs it uses
(docs/conformance.md, "Real exports").

Tolerance, per output: FP32 models within rtol 1e-4 and atol 1e-5 x
max|expected|; QDQ models within one quantization step of the output (the
scale of the DequantizeLinear nearest above it).

As a script, runs the whole corpus on one device and prints a line a model:
    python3 tests/models/real_corpus.py --device simulated   # or cpu, gpu
    python3 tests/models/real_corpus.py --device gpu --gpu-precision fp16
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

import runners

# $COALESCE_REAL_CORPUS, default tests/models/real beside this file (a GPU
# bundle's gpu-check points it at the repository's copy).
CORPUS = Path(os.environ.get("COALESCE_REAL_CORPUS", Path(__file__).resolve().parent / "real"))
FP32_RTOL, FP32_ATOL_SCALE = 1e-4, 1e-5
# FP16 mode keeps activations in float16 (10 mantissa bits) between
# operators: errors of a few float16 steps per layer add up.
FP16_RTOL, FP16_ATOL_SCALE = 2e-2, 1e-2
FP16_QDQ_STEPS = 4
# BF16 mode: bfloat16 keeps 7 mantissa bits, steps 8x float16's. Measured
# on the simulated device: at FP16's tolerance 4 of the 40 exports fail
# (ConvNeXt, Swin v2 logits), all pass from 4e-2, 2e-2; the QDQ models pass
# from 4 steps. Twice that:
BF16_RTOL, BF16_ATOL_SCALE = 8e-2, 4e-2
BF16_QDQ_STEPS = 8
# precision -> (rtol, atol as a fraction of the output's range, QDQ steps)
TOLERANCES = {"fp32": (FP32_RTOL, FP32_ATOL_SCALE, 1),
              "fp16": (FP16_RTOL, FP16_ATOL_SCALE, FP16_QDQ_STEPS),
              "bf16": (BF16_RTOL, BF16_ATOL_SCALE, BF16_QDQ_STEPS)}
TARGETS = ("cpu", "device")  # known_refusals.txt's target names


def manifest() -> dict:
    """Model folder -> its manifest entry ({} when the corpus is missing)."""
    path = CORPUS / "manifest.json"
    return json.loads(path.read_text())["models"] if path.is_file() else {}


def known_refusals() -> dict:
    """(folder, target) -> reason, from known_refusals.txt: one refusal a
    line, `<folder> <cpu|device> <reason>`; '#' starts a comment."""
    refusals = {}
    path = CORPUS / "known_refusals.txt"
    if not path.is_file():
        return refusals
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        folder, target, reason = line.split(None, 2)
        assert target in TARGETS, f"known_refusals.txt:{number}: target {target!r}"
        assert (CORPUS / folder / "model.onnx").is_file(), f"known_refusals.txt:{number}: {folder}"
        refusals[(folder, target)] = reason
    return refusals


def read_tensor(path: Path) -> tuple:
    proto = onnx.TensorProto()
    proto.ParseFromString(path.read_bytes())
    return proto.name, numpy_helper.to_array(proto)


def data_sets(folder: Path) -> list:
    """[(name, feeds, expected)] for each test_data_set_N of a model."""
    sets = []
    for d in sorted(folder.glob("test_data_set_*")):
        feeds = dict(read_tensor(p) for p in sorted(d.glob("input_*.pb")))
        expected = dict(read_tensor(p) for p in sorted(d.glob("output_*.pb")))
        sets.append((d.name, feeds, expected))
    return sets


def quantization_step(model_path: Path, output: str) -> float:
    """The scale of the DequantizeLinear nearest above `output` (through
    the ops between, following their first input): one step of the output's
    quantization."""
    graph = onnx.load(str(model_path), load_external_data=False).graph
    producers = {o: n for n in graph.node for o in n.output}
    scales = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            scales[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    value = output
    while value in producers:
        node = producers[value]
        if node.op_type == "DequantizeLinear":
            return float(np.max(scales[node.input[1]]))
        value = node.input[0]
    raise AssertionError(f"no DequantizeLinear above output {output!r}")


def problems(folder: Path, kind: str, actual: dict, expected: dict,
             precision: str = "fp32") -> list:
    """What differs between the engine's outputs and the reference's, within
    `precision`'s tolerance (TOLERANCES: "fp16" and "bf16" for the device's
    16-bit modes)."""
    rtol, atol_scale, steps = TOLERANCES[precision]
    if kind == "fp32":
        return runners.compare_outputs(actual, expected, rtol, atol_scale)
    found = [] if set(actual) == set(expected) else [
        f"outputs {sorted(actual)}, expected {sorted(expected)}"]
    for name in sorted(set(actual) & set(expected)):
        a, e = actual[name], expected[name]
        if a.shape != e.shape or a.dtype != e.dtype:
            found.append(f"output '{name}': {a.dtype} {list(a.shape)}, expected {e.dtype} "
                         f"{list(e.shape)}")
            continue
        step = quantization_step(folder / "model.onnx", name)
        # In a 16-bit mode a rounding may move a requantization by one step
        # at each quantized layer; the output allows a few.
        diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
        if not (diff <= steps * step * 1.0001).all():
            found.append(f"output '{name}': max |diff| {diff.max()} over {steps} "
                         f"step(s) of {step}")
    return found


def check(onnx_run: Path, device: str, workdir: Path, target: str,
          precision: str = "fp32", only: str = "") -> int:
    """Runs every corpus model on `device` ("cpu", "simulated" or "gpu") and
    prints one line each: PASS, REFUSED (listed in known_refusals.txt for
    `target`, with that reason) or FAIL. precision "fp16" or "bf16" (a
    device only): run with --gpu-precision of that mode and compared within
    its tolerance (TOLERANCES). only: comma-separated substrings; models whose folder name
    contains none of them are skipped. Returns the number of failures."""
    extra_args = [] if precision == "fp32" else ["--gpu-precision", precision]
    refusals = known_refusals()
    failures = ran = 0
    wanted = [s for s in only.split(",") if s]
    for model in sorted(manifest()):
        if wanted and not any(s in model for s in wanted):
            continue
        folder = CORPUS / model
        reason = refusals.get((model, target))
        kind = manifest()[model]["kind"]
        verdict = "PASS"
        for name, feeds, expected in data_sets(folder):
            try:
                run = runners.run_coalesce(folder / "model.onnx", feeds, workdir / model / name,
                                           binary=onnx_run, device=device, threads=2,
                                           extra_args=extra_args)
            except runners.CoalesceRunError as err:
                listed = reason is not None and reason in err.stderr
                verdict = "REFUSED (listed)" if listed else f"FAIL: {err.stderr.strip()[:300]}"
                break
            found = problems(folder, kind, run.outputs, expected, precision)
            if found:
                verdict = f"FAIL ({name}): {found[0][:300]}"
                break
        if verdict == "PASS" and reason is not None:
            verdict = f"PASS (listed as refused: {reason})"
        failures += verdict.startswith("FAIL")
        ran += 1
        print(f"{model:45s} {verdict}", flush=True)
    mode = "" if precision == "fp32" else f" ({precision})"
    print(f"real exports on {device}{mode}: {failures} failed of {ran}")
    return failures


def main() -> int:
    import argparse
    import tempfile
    parser = argparse.ArgumentParser(description="The corpus of real exports on one device.")
    parser.add_argument("--onnx-run", type=Path, default=runners.onnx_run_binary())
    parser.add_argument("--device", default="simulated", choices=("cpu", "simulated", "gpu"))
    parser.add_argument("--gpu-precision", default="fp32", choices=("fp32", "fp16", "bf16"),
                        help="fp16, bf16: the device's 16-bit mode, within its tolerance")
    parser.add_argument("--only", default="",
                        help="comma-separated substrings of the models to run (bert,gpt2)")
    args = parser.parse_args()
    if args.device == "cpu" and args.gpu_precision != "fp32":
        parser.error(f"--gpu-precision {args.gpu_precision} needs --device simulated or gpu")
    target = "cpu" if args.device == "cpu" else "device"
    with tempfile.TemporaryDirectory() as tmp:
        return 1 if check(args.onnx_run, args.device, Path(tmp), target,
                          args.gpu_precision, args.only) else 0


if __name__ == "__main__":
    raise SystemExit(main())
