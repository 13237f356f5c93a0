"""The corpus of real exports (tests/models/real/) served by coalesce-server
from a Triton-layout repository without config.pbtxt files (auto-complete,
as Triton does for ONNX models), each queried with tritonclient at batch 1
and batch 4 and compared with the committed onnxruntime outputs
(docs/conformance.md, "Real exports").

The torch.export models keep their weights in model.onnx.data beside
model.onnx, so this also serves external data from version folders. Models
known_refusals.txt lists for the CPU must be UNAVAILABLE with that reason
while the others serve.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import tritonclient.grpc as grpcclient

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tests" / "models"))

import real_corpus  # noqa: E402

MODELS = sorted(real_corpus.manifest())


def _repository(root: Path) -> Path:
    """<root>/<model>/1/ with links to each model's files."""
    for model in MODELS:
        version = root / model / "1"
        version.mkdir(parents=True)
        for name in ("model.onnx", "model.onnx.data"):
            source = real_corpus.CORPUS / model / name
            if source.is_file():
                (version / name).symlink_to(source)
    return root


def _infer(client, model: str, feeds: dict) -> dict:
    inputs = []
    for name, value in feeds.items():
        tensor = grpcclient.InferInput(name, list(value.shape),
                                       grpcclient.np_to_triton_dtype(value.dtype))
        tensor.set_data_from_numpy(value)
        inputs.append(tensor)
    metadata = client.get_model_metadata(model)
    result = client.infer(model, inputs)
    return {o.name: result.as_numpy(o.name) for o in metadata.outputs}


def test_every_real_export_serves_at_batch_1_and_4(start_server, tmp_path):
    assert MODELS, "the corpus is missing"
    srv = start_server(_repository(tmp_path / "repo"))
    client = srv.client()
    index = {m.name: m for m in client.get_model_repository_index().models}
    refusals = real_corpus.known_refusals()
    failures = []
    compared = 0
    for model in MODELS:
        reason = refusals.get((model, "cpu"))
        if reason is not None:
            if index[model].state != "UNAVAILABLE" or reason not in index[model].reason:
                failures.append(f"{model}: listed as refused ({reason}) but {index[model]}")
            continue
        if index[model].state != "READY":
            failures.append(f"{model}: {index[model].state}: {index[model].reason}")
            continue
        kind = real_corpus.manifest()[model]["kind"]
        for name, feeds, expected in real_corpus.data_sets(real_corpus.CORPUS / model):
            try:
                actual = _infer(client, model, feeds)
            except Exception as err:  # noqa: BLE001 - every failure is reported together
                failures.append(f"{model} ({name}): {err}")
                continue
            found = real_corpus.problems(real_corpus.CORPUS / model, kind, actual, expected)
            failures += [f"{model} ({name}): {p}" for p in found]
            compared += 1
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)
    served = [m for m in MODELS if (m, "cpu") not in refusals]
    assert compared == 2 * len(served), f"compared {compared} data sets of {len(served)} models"
