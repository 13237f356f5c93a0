"""Warm-up at load (docs/server.md, "Warm-up at load"), through a real server:
config.pbtxt's model_warmup runs before the model is ready (from a file of
the model's warmup/ folder too), a GPU instance on the simulated device
plugin prepares each padded batch size twice, and a bad sample fails its
model's load with the reason while the other models serve."""

import os
import re

import numpy as np

import generate_models as gm
from test_metrics import scrape
from conftest import tiny_config
from e2e_util import make_inputs

SAMPLE = """model_warmup [ {{ name: "{name}" batch_size: {rows} count: {count}
  inputs {{ key: "x" value: {{ data_type: TYPE_FP32 dims: [ {width} ] {data} }} }} }} ]
"""


def warmup(name: str, rows: int = 2, count: int = 1, width: int = 4,
           data: str = "zero_data: true") -> str:
    return SAMPLE.format(name=name, rows=rows, count=count, width=width, data=data)


def load_line(log: str, model: str) -> str:
    lines = [l for l in log.splitlines() if f"model '{model}' version 1: parse" in l]
    assert len(lines) == 1, log[-3000:]
    return lines[0]


def test_samples_run_before_ready_and_a_bad_one_fails_its_load(start_server, tmp_path):
    repo = tmp_path / "repo_warmup"
    gm.write_model(repo, "zeros", gm.make_tiny_model(),
                   tiny_config("zeros") + warmup("z", rows=3, count=2))
    gm.write_model(repo, "from_file", gm.make_tiny_model(),
                   tiny_config("from_file")
                   + warmup("f", rows=2, data='input_data_file: "row.bin"'))
    (repo / "from_file" / "warmup").mkdir()
    np.arange(4, dtype=np.float32).tofile(repo / "from_file" / "warmup" / "row.bin")
    gm.write_model(repo, "bad", gm.make_tiny_model(),
                   tiny_config("bad") + warmup("wrong_width", width=5))
    srv = start_server(repo)
    client = srv.client()
    index = {m.name: m for m in client.get_model_repository_index().models}
    assert index["zeros"].state == "READY", index["zeros"]
    assert index["from_file"].state == "READY", index["from_file"]
    assert index["bad"].state == "UNAVAILABLE", index["bad"]
    assert "model_warmup 'wrong_width': input 'x': dim 0 is 5" in index["bad"].reason, \
        index["bad"].reason
    log = srv.log()
    assert "(2 batch(es) run; 1 model_warmup sample(s))" in load_line(log, "zeros")
    assert "(1 batch(es) run; 1 model_warmup sample(s))" in load_line(log, "from_file")
    x = np.ones((1, 4), np.float32)
    result = client.infer("zeros", make_inputs(x=x), client_timeout=30)
    np.testing.assert_allclose(result.as_numpy("y"), x * 2 + 1, rtol=1e-6)
    # Warm-up batches are not requests: the statistics count none of them.
    stats = client.get_inference_statistics("zeros", as_json=True)
    assert int(stats["model_stats"][0]["inference_count"]) == 1, stats


def test_gpu_instance_prepares_every_padded_batch_size(start_server, tmp_path):
    """KIND_GPU on the simulated device: max_batch_size 8 gives the sizes 8,
    6, 4, 3, 2, 1, each run twice (bind, then capture), after the one
    sample; the second slot then runs a batch of 1 twice (not padded: its
    graph is the slot's own); then every batch size serves."""
    plugin = os.environ.get("COALESCE_SIMULATED_PLUGIN")
    assert plugin and os.path.isfile(plugin), "COALESCE_SIMULATED_PLUGIN: run through ctest"
    repo = tmp_path / "repo_gpu_warmup"
    gm.write_model(repo, "on_gpu", gm.make_tiny_model(),
                   tiny_config("on_gpu").replace("kind: KIND_CPU", "kind: KIND_GPU")
                   + warmup("s", rows=1))
    srv = start_server(repo, env={"COALESCE_DEVICE_PLUGIN": plugin})
    client = srv.client()
    assert client.is_model_ready("on_gpu"), srv.log()[-3000:]
    line = load_line(srv.log(), "on_gpu")
    assert re.search(r"\(15 batch\(es\) run; 1 model_warmup sample\(s\)\)", line), line
    # Each warm-up batch's time, in the order run (the sample, then largest first).
    timed = re.findall(r"model 'on_gpu': instance 0: warm-up '([^']+)' [0-9.]+ s \((\d) run",
                       srv.log())
    assert timed == [("s", "1")] + [(f"batch size {b}", "2") for b in (8, 6, 4, 3, 2, 1)], timed
    for rows in range(1, 9):
        x = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4)
        result = client.infer("on_gpu", make_inputs(x=x), client_timeout=30)
        np.testing.assert_allclose(result.as_numpy("y"), x * 2 + 1, rtol=1e-6)
    # Every slot was ready for every size: no batch needed device setup.
    _, samples = scrape(srv.metrics_url)
    setup = {dict(labels)["model_instance"]: v for (name, labels), v in samples.items()
             if name == "coalesce_setup_batches_total" and dict(labels)["model"] == "on_gpu"}
    assert setup == {"0": 0}, setup
