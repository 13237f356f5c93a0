"""The corpus of real exports (tests/models/real/, made by
tests/models/export_real.py from torchvision and transformers with both
PyTorch exporters) against the onnxruntime outputs committed beside each
model (docs/conformance.md, "Real exports").

Every model runs through coalesce-onnx-run on the CPU and, as a GPU
instance, on the simulated device (the capability check KIND_GPU uses, then
the device kernels' math on the host), for each committed data set (batch 1
and batch 4), compared as real_corpus.problems says. The device runs each
model three times: in float32, in FP16 mode as `gpu_precision: "fp16"`
serves it (float16 activations, NHWC convolutions, the fused plan), and in
BF16 mode likewise, each within its mode's tolerance.

A model the engine refuses fails its test unless known_refusals.txt lists it
for that target with the reason, which must appear in the error; a listed
model that no longer fails fails the test, so the list only shrinks. A
wrong result is never a refusal: it always fails.
"""

from __future__ import annotations

import pytest

import real_corpus
import runners

# target -> (--device, precision, refusals listed for this target)
DEVICES = {"cpu": ("cpu", "fp32", "cpu"),
           "device": ("simulated", "fp32", "device"),
           "device_fp16": ("simulated", "fp16", "device"),
           "device_bf16": ("simulated", "bf16", "device")}
MODELS = sorted(real_corpus.manifest())
REFUSALS = real_corpus.known_refusals()


@pytest.mark.parametrize("target", sorted(DEVICES))
@pytest.mark.parametrize("model", MODELS)
def test_real_export(model, target, onnx_run, tmp_path):
    folder = real_corpus.CORPUS / model
    kind = real_corpus.manifest()[model]["kind"]
    device, precision, refusal_target = DEVICES[target]
    extra_args = [] if precision == "fp32" else ["--gpu-precision", precision]
    reason = REFUSALS.get((model, refusal_target))
    sets = real_corpus.data_sets(folder)
    assert sets, f"{model}: no test_data_set_* folders"
    for name, feeds, expected in sets:
        try:
            run = runners.run_coalesce(folder / "model.onnx", feeds, tmp_path / name,
                                       binary=onnx_run, device=device, threads=2,
                                       extra_args=extra_args)
        except runners.CoalesceRunError as err:
            if reason is None:
                pytest.fail(f"{model} ({target}, {name}) refused; fix it or list it in "
                            f"known_refusals.txt with the reason:\n{err.stderr}", pytrace=False)
            assert reason in err.stderr, f"listed reason {reason!r} not in:\n{err.stderr}"
            return
        found = real_corpus.problems(folder, kind, run.outputs, expected, precision)
        assert not found, f"{model} ({target}, {name}):\n" + "\n".join(found)
    assert reason is None, (f"{model} ({target}) now runs: remove it from known_refusals.txt "
                            f"(listed: {reason})")


def test_the_corpus_is_there():
    """Without the corpus the suite above would compare nothing."""
    assert len(MODELS) >= 30, f"only {len(MODELS)} models in {real_corpus.CORPUS}/manifest.json"
    exporters = {real_corpus.manifest()[m]["exporter"] for m in MODELS}
    assert exporters == {"torchscript", "dynamo"}, exporters
    assert any(real_corpus.manifest()[m]["kind"] == "qdq" for m in MODELS)
    for model in MODELS:
        assert (real_corpus.CORPUS / model / "model.onnx").is_file(), model
