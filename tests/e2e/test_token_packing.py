"""The model parameter token_packing through a real server (docs/engine.md,
"Token packing"): a real BERT export (tests/models/real/) served twice,
packed and padded, on a CPU instance and, through the simulated device
plugin, on a KIND_GPU instance; requests of mixed lengths sent at once so
that the batcher coalesces them, each answered with the padded model's
values at its real positions and zeros at its padded ones. A model that
does not qualify serves padded with the reason in the log; a bad value
fails that model's load, naming the parameter."""

from __future__ import annotations

import os
import re
import threading

import numpy as np

from conftest import REPO_ROOT, wait_for
from e2e_util import make_inputs
from test_metrics import scrape

CORPUS = REPO_ROOT / "tests" / "models" / "real"
SEQ = 16
LENGTHS = [16, 5, 11, 1, 9, 3]


def _write(repo, name: str, export: str, packing: str, kind: str = "KIND_CPU"):
    version = repo / name / "1"
    version.mkdir(parents=True)
    for file in ("model.onnx", "model.onnx.data"):  # dynamo exports: weights beside
        if (CORPUS / export / file).is_file():
            (version / file).symlink_to(CORPUS / export / file)
    (repo / name / "config.pbtxt").write_text(
        f'name: "{name}"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n'
        "dynamic_batching { max_queue_delay_microseconds: 200000 "
        f"preferred_batch_size: [ {len(LENGTHS)} ] }}\n"
        f"instance_group [ {{ count: 1 kind: {kind} }} ]\n"
        f'parameters {{ key: "token_packing" value: {{ string_value: "{packing}" }} }}\n')


def _request(length: int) -> dict:
    ids = np.zeros((1, SEQ), np.int64)
    ids[0, :length] = (np.arange(length) * 7 + length) % 1000 + 1
    mask = (np.arange(SEQ)[None, :] < length).astype(np.int64)
    return {"input_ids": ids, "attention_mask": mask,
            "token_type_ids": np.zeros((1, SEQ), np.int64)}


def _infer_all_at_once(client, model: str, lengths: list = LENGTHS) -> list:
    """One request per length, sent together; each answer's outputs."""
    answers = [None] * len(lengths)

    def send(i: int):
        result = client.infer(model, make_inputs(**_request(lengths[i])), client_timeout=60)
        answers[i] = {name: result.as_numpy(name)
                      for name in ("last_hidden_state", "pooler_output")}
    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(lengths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(a is not None for a in answers), answers
    return answers


def _check(client, packed: str, padded: str):
    got = _infer_all_at_once(client, packed)
    want = _infer_all_at_once(client, padded)
    for length, g, w in zip(LENGTHS, got, want):
        np.testing.assert_allclose(g["last_hidden_state"][0, :length],
                                   w["last_hidden_state"][0, :length], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(g["last_hidden_state"][0, length:], 0)
        np.testing.assert_allclose(g["pooler_output"], w["pooler_output"], rtol=1e-5, atol=1e-5)
    stats = client.get_inference_statistics(packed).model_stats[0]
    # The six requests ran in fewer batches than requests: they were packed
    # together, not one by one.
    assert stats.execution_count < stats.inference_count, stats


def test_packed_cpu_and_gpu_instances_answer_as_padded(start_server, tmp_path):
    plugin = os.environ.get("COALESCE_SIMULATED_PLUGIN")
    assert plugin and os.path.isfile(plugin), "COALESCE_SIMULATED_PLUGIN: run through ctest"
    repo = tmp_path / "repo"
    _write(repo, "bert_packed", "bert_tiny__dynamo", "true")
    _write(repo, "bert_padded", "bert_tiny__dynamo", "false")
    _write(repo, "bert_gpu_packed", "bert_tiny__torchscript", "true", "KIND_GPU")
    _write(repo, "bert_gpu_padded", "bert_tiny__torchscript", "false", "KIND_GPU")
    srv = start_server(repo, env={"COALESCE_DEVICE_PLUGIN": plugin})
    client = srv.client()
    for model in ("bert_packed", "bert_padded", "bert_gpu_packed", "bert_gpu_padded"):
        assert client.is_model_ready(model), model
    log = srv.log_path.read_text(errors="replace")
    assert "model 'bert_packed': token packing on padding mask 'attention_mask'" in log
    assert "model 'bert_padded': token packing" not in log
    _check(client, "bert_packed", "bert_padded")
    _check(client, "bert_gpu_packed", "bert_gpu_padded")
    # Five at once: a batch size between the graph sizes (6 is one). The
    # padded export's rows mix (batch_rows.h), so the warm-up prepared every
    # size; the packed one pads five rows to six. Neither batch needed
    # device setup after READY.
    for model in ("bert_gpu_packed", "bert_gpu_padded"):
        _infer_all_at_once(client, model, LENGTHS[:5])
    _, samples = scrape(srv.metrics_url)
    setup = {dict(labels)["model"]: v for (name, labels), v in samples.items()
             if name == "coalesce_setup_batches_total"
             and dict(labels)["model"].startswith("bert_gpu")}
    assert setup == {"bert_gpu_packed": 0, "bert_gpu_padded": 0}, setup


def test_gpu_packed_model_is_warmed_for_every_size_and_token_bucket(start_server, tmp_path):
    """A packed KIND_GPU model prepares each padded batch size's 8 token
    buckets before it is READY (each a mask with that many real tokens);
    then batches of any size and lengths need no device setup."""
    plugin = os.environ.get("COALESCE_SIMULATED_PLUGIN")
    assert plugin and os.path.isfile(plugin), "COALESCE_SIMULATED_PLUGIN: run through ctest"
    repo = tmp_path / "repo"
    _write(repo, "bert_gpu_packed", "bert_tiny__torchscript", "true", "KIND_GPU")
    srv = start_server(repo, env={"COALESCE_DEVICE_PLUGIN": plugin})
    client = srv.client()
    assert client.is_model_ready("bert_gpu_packed")
    log = srv.log_path.read_text(errors="replace")
    timed = re.findall(r"model 'bert_gpu_packed': instance 0: warm-up '([^']+)' [0-9.]+ s "
                       r"\((\d) run", log)
    assert timed == [(f"batch size {b}, variant {v} of 8", "2")
                     for b in (8, 6, 4, 3, 2, 1) for v in range(1, 9)], timed
    _infer_all_at_once(client, "bert_gpu_packed")  # a batch of several
    for length in (16, 7, 1):  # batches of one
        client.infer("bert_gpu_packed", make_inputs(**_request(length)), client_timeout=60)
    _, samples = scrape(srv.metrics_url)
    setup = {dict(labels)["model_instance"]: v for (name, labels), v in samples.items()
             if name == "coalesce_setup_batches_total"
             and dict(labels)["model"] == "bert_gpu_packed"}
    assert setup == {"0": 0}, setup


def test_a_model_that_does_not_qualify_serves_padded_and_a_bad_value_fails(
        start_server, tmp_path):
    repo = tmp_path / "repo"
    _write(repo, "vit_packed", "vit_tiny__dynamo", "true")
    _write(repo, "bad_value", "bert_tiny__dynamo", "on")
    srv = start_server(repo, wait_ready=False)
    client = srv.client()

    def states():
        return {m.name: m for m in client.get_model_repository_index().models}

    def settled():
        index = states()
        return (index.get("vit_packed") is not None and index["vit_packed"].state == "READY"
                and index.get("bad_value") is not None
                and index["bad_value"].state == "UNAVAILABLE")
    wait_for(settled, 60, 0.2, "vit_packed READY and bad_value UNAVAILABLE")
    index = states()
    assert index["vit_packed"].state == "READY", index["vit_packed"]
    assert index["bad_value"].state == "UNAVAILABLE", index["bad_value"]
    assert "'token_packing'" in index["bad_value"].reason, index["bad_value"].reason
    log = srv.log_path.read_text(errors="replace")
    assert ("model 'vit_packed': token packing: input 'input' is not "
            "[batch, sequence]; every batch runs padded") in log, log[-3000:]
