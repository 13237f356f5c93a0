"""Real networks through the server: the nine ONNX light networks (random
weights, batch dimension made symbolic) and the tiny BERT-style encoder, each
with dynamic batching and max_batch_size 8, answered through tritonclient and
compared with ONNX Runtime (graph optimizations off) on the same model file at
the onnxruntime-comparison tolerance (docs/conformance.md).

One server serves the whole zoo. Per model: requests of batch 1, 3 and 8 one
after the other, then four concurrent requests of two rows that the batcher
must merge (a 200 ms window); VGG-19 gets smaller batches (SMALLER_BATCHES).
The reference for each set of rows is one ONNX Runtime run on all of them;
requests are slices of it. A model the server failed to load fails its tests
with the server's reason.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from conftest import ServerProcess, _require_binary, wait_for
from e2e_util import AsyncCollector, get_stats, make_inputs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))

import make_encoder  # noqa: E402
import randomize_light  # noqa: E402
import runners  # noqa: E402

SEED = 0
MAX_BATCH = 8
SEQUENTIAL_BATCHES = (1, 3, 8)
CONCURRENT_REQUESTS, CONCURRENT_ROWS = 4, 2  # 4 x 2 rows fill one batch of 8
# VGG-19 costs 20 GMAC per image: on 2 cores a batch of 8 takes ~8 s in the
# engine and ~14 s in the reference, so it gets batches 1 and 3, then two
# concurrent single rows.
# model -> (sequential batch sizes, concurrent requests, rows per request)
SMALLER_BATCHES = {"light_vgg19": ((1, 3), 2, 1)}
QUEUE_DELAY_US = 200_000
REFERENCE_THREADS = 2
CLIENT_TIMEOUT_S = 300
ENCODER = "tiny_encoder"
ENCODER_CONFIG = make_encoder.preset("tiny", pooler=True, seed=SEED)
ENCODER_SEQ = 24
ZOO = (*randomize_light.LIGHT_NETS, ENCODER)


def zoo_config(name: str) -> str:
    """Inputs and outputs are completed by the server from the model."""
    return f"""name: "{name}"
platform: "onnxruntime_onnx"
max_batch_size: {MAX_BATCH}
dynamic_batching {{ max_queue_delay_microseconds: {QUEUE_DELAY_US} }}
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
"""


@dataclasses.dataclass
class Zoo:
    repo: Path
    row_dims: dict  # light net -> {input name: dims of one row}


def _write(repo: Path, name: str, model: onnx.ModelProto) -> None:
    (repo / name / "1").mkdir(parents=True)
    onnx.save(model, str(repo / name / "1" / "model.onnx"))
    (repo / name / "config.pbtxt").write_text(zoo_config(name))


def build_zoo(repo: Path, light_dir: Path) -> Zoo:
    row_dims = {}
    for net in randomize_light.LIGHT_NETS:
        model = randomize_light.randomize_light(onnx.load(str(light_dir / f"{net}.onnx")), SEED,
                                                make_batchable=True)
        row_dims[net] = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim[1:]]
                         for vi in randomize_light.real_inputs(model)}
        _write(repo, net, model)
    _write(repo, ENCODER, make_encoder.make_encoder(ENCODER_CONFIG))
    return Zoo(repo, row_dims)


def model_path(zoo: Zoo, name: str) -> Path:
    return zoo.repo / name / "1" / "model.onnx"


def rows_for(zoo: Zoo, name: str, rows: int, seed: int) -> dict:
    """`rows` input rows for model `name`: N(0, 1) images, or padded token
    rows for the encoder."""
    if name == ENCODER:
        return make_encoder.encoder_inputs(ENCODER_CONFIG, rows, ENCODER_SEQ, seed=seed)
    rng = np.random.default_rng(seed)
    return {input_name: rng.standard_normal([rows, *dims]).astype(np.float32)
            for input_name, dims in zoo.row_dims[name].items()}


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> Zoo:
    light_dir = runners.conformance_data_dir() / "light"
    if not light_dir.is_dir():
        pytest.fail(f"light networks not found in {light_dir}: set COALESCE_CONFORMANCE_DATA")
    return build_zoo(tmp_path_factory.mktemp("zoo"), light_dir)


@pytest.fixture(scope="module")
def zoo_server(zoo, tmp_path_factory):
    _require_binary()
    srv = ServerProcess(zoo.repo, tmp_path_factory.mktemp("zoo_log") / "server.log")
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def zoo_client(zoo_server):
    client = zoo_server.client()
    yield client
    client.close()


def require_ready(client, server: ServerProcess, name: str) -> None:
    """Fails with the server's reason when `name` did not load."""
    if client.is_model_ready(name):
        return
    index = client.get_model_repository_index(as_json=True).get("models", [])
    reason = next((m.get("reason", "") for m in index if m.get("name") == name), "not listed")
    pytest.fail(f"model '{name}' is not ready: {reason}\nserver log tail:\n{server.log()[-3000:]}",
                pytrace=False)


def batch_plan(name: str):
    """(sequential batch sizes, concurrent requests, rows per request) for `name`."""
    return SMALLER_BATCHES.get(name, (SEQUENTIAL_BATCHES, CONCURRENT_REQUESTS, CONCURRENT_ROWS))


def slice_rows(feeds: dict, start: int, stop: int) -> dict:
    return {k: np.ascontiguousarray(v[start:stop]) for k, v in feeds.items()}


def assert_response_matches(result, expected: dict, what: str) -> None:
    got = {name: result.as_numpy(name) for name in expected}
    problems = runners.compare_outputs(got, expected)
    assert not problems, f"{what}: " + "; ".join(problems)


@pytest.mark.parametrize("name", ZOO)
def test_batches_match_onnxruntime(name, zoo, zoo_server, zoo_client):
    require_ready(zoo_client, zoo_server, name)
    batches, _, _ = batch_plan(name)
    feeds = rows_for(zoo, name, max(batches), seed=SEED)
    expected = runners.run_onnxruntime(model_path(zoo, name), feeds, REFERENCE_THREADS)
    randomize_light.check_outputs(expected)
    for batch in batches:
        result = zoo_client.infer(name, make_inputs(**slice_rows(feeds, 0, batch)),
                                  client_timeout=CLIENT_TIMEOUT_S)
        assert_response_matches(result, slice_rows(expected, 0, batch), f"{name} batch {batch}")


def executions_by_batch_size(before, after) -> dict:
    """batch size -> executions of that size between two statistics snapshots."""
    old = {b.batch_size: b.compute_infer.count for b in before.batch_stats}
    return {b.batch_size: b.compute_infer.count - old.get(b.batch_size, 0)
            for b in after.batch_stats if b.compute_infer.count > old.get(b.batch_size, 0)}


@pytest.mark.parametrize("name", ZOO)
def test_concurrent_requests_are_merged(name, zoo, zoo_server, zoo_client):
    require_ready(zoo_client, zoo_server, name)
    _, requests, per_request = batch_plan(name)
    total = requests * per_request
    feeds = rows_for(zoo, name, total, seed=SEED + 1)
    expected = runners.run_onnxruntime(model_path(zoo, name), feeds, REFERENCE_THREADS)
    before = get_stats(zoo_client, name)
    collector = AsyncCollector()
    for i in range(requests):
        rows = slice_rows(feeds, i * per_request, (i + 1) * per_request)
        zoo_client.async_infer(name, make_inputs(**rows), collector.tagged(i),
                               client_timeout=CLIENT_TIMEOUT_S)
    for tag, result, error in collector.get(requests, timeout=CLIENT_TIMEOUT_S):
        assert error is None, f"{name} request {tag}: {error}"
        rows = slice_rows(expected, tag * per_request, (tag + 1) * per_request)
        assert_response_matches(result, rows, f"{name} concurrent request {tag}")
    after = wait_for(lambda: (s := get_stats(zoo_client, name)).inference_count
                     - before.inference_count >= total and s, 10, what="statistics")
    executed = executions_by_batch_size(before, after)
    assert executed and sum(executed.values()) < requests, (
        f"{name}: {requests} concurrent requests ran as batches {executed}, none merged")
    assert max(executed) > per_request, executed
