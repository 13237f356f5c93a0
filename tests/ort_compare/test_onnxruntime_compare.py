"""The engine against ONNX Runtime on real networks (docs/conformance.md,
"onnxruntime comparison").

Each case builds a model (a light network with seeded random weights, or a
generated BERT-style encoder), runs it in ONNX Runtime with every graph
optimization disabled, then through coalesce-onnx-run (Model::LoadFromFile
and the CPU executor, as the server runs it) twice: with the engine's graph
optimizations (the server's default: Conv+BN folding, fusions) and without
them (every node as written, so the unfused BatchNormalization, decomposed
LayerNorm and erf GELU run too). Every output is compared at rtol 1e-3 and
atol 1e-4 x the output's largest magnitude (runners.py).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest

import make_encoder
import randomize_light
import runners

SEED = 0
ROOT = Path(__file__).resolve().parents[2]
THREADS = 2  # the reference machine's cores
ENGINE_MODES = {"optimized": True, "as-written": False}  # name -> graph_optimizations


def _engine_problems(path, feeds: dict, expected: dict, workdir, onnx_run) -> list:
    """What differs from `expected`, for each engine mode: a failed run or
    the outputs out of tolerance."""
    problems = []
    for mode, optimize in ENGINE_MODES.items():
        t0 = time.monotonic()
        try:
            run = runners.run_coalesce(path, feeds, workdir / mode, threads=THREADS, binary=onnx_run,
                                       graph_optimizations=optimize)
        except runners.CoalesceRunError as err:
            problems.append(f"[{mode}] {err}")
            continue
        print(f"  coalesce-onnx-run ({mode}) {time.monotonic() - t0:.2f} s")
        problems += [f"[{mode}] {p}" for p in runners.compare_outputs(run.outputs, expected)]
    return problems


def _compare(model: onnx.ModelProto, feeds: dict, workdir, onnx_run, what: str) -> None:
    """Saves `model`, runs the reference and the engine (both modes), and
    fails with every difference found."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "model.onnx"
    onnx.save(model, str(path))
    t0 = time.monotonic()
    expected = runners.run_onnxruntime(path, feeds, threads=THREADS)
    randomize_light.check_outputs(expected)  # the reference itself is not degenerate
    print(f"{what}: onnxruntime {time.monotonic() - t0:.2f} s")
    problems = _engine_problems(path, feeds, expected, workdir, onnx_run)
    if problems:
        pytest.fail(f"{what}:\n" + "\n".join(problems), pytrace=False)


@pytest.mark.parametrize("net", randomize_light.LIGHT_NETS)
def test_light_net_with_random_weights(net, light_dir, onnx_run, tmp_path):
    """Batch 1 at 224x224, the Softmax input exposed as a second output so the
    logits are compared, not only the probabilities."""
    original = onnx.load(str(light_dir / f"{net}.onnx"))
    model = randomize_light.randomize_light(original, SEED, expose_logits=True)
    feeds = randomize_light.random_inputs(model, batch=1, seed=SEED)
    _compare(model, feeds, tmp_path, onnx_run, net)


# VGG-19 is left out: its operators (Conv, Relu, MaxPool, Gemm, Dropout,
# Softmax) are AlexNet's, and the simulated device's direct convolution
# takes a minute on it.
SIMULATED_LIGHT_NETS = [n for n in randomize_light.LIGHT_NETS if n != "light_vgg19"]


@pytest.mark.parametrize("net", SIMULATED_LIGHT_NETS)
def test_light_net_as_a_gpu_instance_on_the_simulated_device(net, light_dir, onnx_run, tmp_path):
    """Each light network through `--device simulated` (the GPU path with
    the CUDA kernels' math on the host; convolutions as a direct loop, where
    the GPU runs cuDNN) against ONNX Runtime, batch 1, logits exposed: every
    node of these networks is one the GPU can run."""
    original = onnx.load(str(light_dir / f"{net}.onnx"))
    model = randomize_light.randomize_light(original, SEED, expose_logits=True)
    feeds = randomize_light.random_inputs(model, batch=1, seed=SEED)
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    expected = runners.run_onnxruntime(path, feeds, threads=THREADS)
    try:
        run = runners.run_coalesce(path, feeds, tmp_path, binary=onnx_run, device="simulated")
    except runners.CoalesceRunError as err:
        pytest.fail(str(err), pytrace=False)
    problems = runners.compare_outputs(run.outputs, expected)
    assert not problems, "\n".join(problems)


def test_example_models_as_gpu_instances_on_the_simulated_device(onnx_run, tmp_path):
    """The example repository's models (examples/generate_models.py) through
    `--device simulated` against ONNX Runtime, variable dims as 3."""
    repo = tmp_path / "models"
    subprocess.run([sys.executable, str(ROOT / "examples" / "generate_models.py"), "--out", str(repo)],
                   check=True, capture_output=True)
    rng = np.random.default_rng(SEED)
    models = sorted(repo.glob("*/1/model.onnx"))
    assert len(models) >= 3, models
    for path in models:
        graph = onnx.load(str(path)).graph
        feeds = {i.name: rng.standard_normal([d.dim_value or 3 for d in i.type.tensor_type.shape.dim])
                 .astype(np.float32) for i in graph.input}
        expected = runners.run_onnxruntime(path, feeds, threads=THREADS)
        run = runners.run_coalesce(path, feeds, tmp_path / path.parts[-3], binary=onnx_run,
                                   device="simulated")
        problems = runners.compare_outputs(run.outputs, expected)
        assert not problems, f"{path.parts[-3]}: " + "\n".join(problems)


# (layer_norm, gelu, token_type_ids, pooler): both LayerNorm forms and both
# GELU forms, each with and without the optional input and output.
ENCODER_VARIANTS = [
    ("decomposed", "erf", False, True),
    ("op", "erf", True, False),
    ("decomposed", "tanh", True, True),
    ("op", "tanh", False, True),
]


@pytest.mark.parametrize("layer_norm,gelu,token_type_ids,pooler", ENCODER_VARIANTS)
def test_tiny_encoder(layer_norm, gelu, token_type_ids, pooler, onnx_run, tmp_path):
    """The tiny preset (2 layers, hidden 64, 4 heads) on a padded batch of 3
    (rows keep 27, 22 and 16 of 32 tokens), then on one unpadded sequence of
    odd length 7: different shapes through the same model."""
    cfg = make_encoder.preset("tiny", layer_norm=layer_norm, gelu=gelu,
                              token_type_ids=token_type_ids, pooler=pooler, seed=SEED)
    model = make_encoder.make_encoder(cfg)
    padded = make_encoder.encoder_inputs(cfg, batch=3, seq=32, seed=SEED, padded=True)
    assert (padded["attention_mask"] == 0).any(), "the padded case must mask something"
    what = f"encoder (layer_norm={layer_norm}, gelu={gelu})"
    _compare(model, padded, tmp_path / "padded", onnx_run, f"{what} padded batch 3")
    single = make_encoder.encoder_inputs(cfg, batch=1, seq=7, seed=SEED + 1, padded=False)
    _compare(model, single, tmp_path / "single", onnx_run, f"{what} batch 1 seq 7")


@pytest.mark.parametrize("layer_norm,gelu,token_type_ids,pooler", ENCODER_VARIANTS)
def test_tiny_encoder_as_a_gpu_instance_on_the_simulated_device(
        layer_norm, gelu, token_type_ids, pooler, onnx_run, tmp_path):
    """The same encoders through `--device simulated`: the GPU path (neutral
    plan, the device registry's lowering, device arena and views, the
    pipelined executor) with the CUDA kernels' math run on the host, against
    ONNX Runtime, with the graph optimizations the server applies. So every
    node of these encoders is one the GPU can run, on every CI run."""
    cfg = make_encoder.preset("tiny", layer_norm=layer_norm, gelu=gelu,
                              token_type_ids=token_type_ids, pooler=pooler, seed=SEED)
    model = make_encoder.make_encoder(cfg)
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    for name, feeds in (
            ("padded batch 3", make_encoder.encoder_inputs(cfg, batch=3, seq=32, seed=SEED, padded=True)),
            ("batch 1 seq 7", make_encoder.encoder_inputs(cfg, batch=1, seq=7, seed=SEED + 1, padded=False))):
        expected = runners.run_onnxruntime(path, feeds, threads=THREADS)
        try:
            run = runners.run_coalesce(path, feeds, tmp_path / name.replace(" ", "_"),
                                       binary=onnx_run, device="simulated")
        except runners.CoalesceRunError as err:
            pytest.fail(f"{name}: {err}", pytrace=False)
        problems = runners.compare_outputs(run.outputs, expected)
        assert not problems, f"{name}: " + "\n".join(problems)


def test_profile_accounts_for_every_node_that_ran(onnx_run, tmp_path):
    """--profile on the tiny encoder as written: each op type's time is the
    sum of its nodes', the shares add up to 100%, and every node of the graph
    that is not computed while planning shows up once."""
    cfg = make_encoder.preset("tiny", layer_norm="decomposed", gelu="erf", seed=SEED)
    model = make_encoder.make_encoder(cfg)
    path = tmp_path / "encoder.onnx"
    onnx.save(model, str(path))
    feeds = make_encoder.encoder_inputs(cfg, batch=2, seq=16, seed=SEED, padded=True)
    run = runners.run_coalesce(path, feeds, tmp_path, threads=THREADS, repeat=3,
                               graph_optimizations=False, profile=True, binary=onnx_run)
    prof = run.profile
    assert prof["runs"] == 3
    assert "op type" in run.stdout and "FusedMatMul" not in run.stdout  # as written
    by_type = {}
    for node in prof["nodes"]:
        by_type.setdefault(node["op_type"], []).append(node["ms_per_run"])
    assert {t["op_type"] for t in prof["op_types"]} == set(by_type)
    for row in prof["op_types"]:
        assert row["nodes"] == len(by_type[row["op_type"]]), row
        assert row["ms_per_run"] == pytest.approx(sum(by_type[row["op_type"]]), rel=1e-3, abs=1e-5)
    assert sum(t["share_percent"] for t in prof["op_types"]) == pytest.approx(100, abs=0.1)
    assert prof["total_ms_per_run"] > 0
    graph_ops = {n.op_type for n in model.graph.node}
    assert {"MatMul", "Softmax", "Erf"} <= set(by_type) <= graph_ops, set(by_type)
    names = [n["name"] for n in prof["nodes"]]
    assert len(names) == len(set(names))
    ms = [n["ms_per_run"] for n in prof["nodes"]]
    assert ms == sorted(ms, reverse=True)


@pytest.mark.parametrize("net", ["light_shufflenet", "light_inception_v1"])
def test_batchable_variant_keeps_rows_independent(net, light_dir):
    """make_batchable (used by tests/e2e/test_model_zoo.py) rewrites batch-1
    Reshapes: ShuffleNet's 32 channel shuffles, Inception v1's flatten next to
    a weight Reshape that must stay. In ONNX Runtime, each row of a batch of 3
    through the rewritten model must equal that row alone through the
    original graph (same weights)."""
    original = onnx.load(str(light_dir / f"{net}.onnx"))
    fixed = randomize_light.randomize_light(original, SEED)
    batchable = randomize_light.randomize_light(original, SEED, make_batchable=True)
    feeds = randomize_light.random_inputs(batchable, batch=3, seed=SEED)
    (name, images), = feeds.items()
    batched = runners.run_onnxruntime(batchable, feeds, threads=THREADS)
    for row in range(3):
        alone = runners.run_onnxruntime(fixed, {name: images[row:row + 1]}, threads=THREADS)
        rows = {k: v[row:row + 1] for k, v in batched.items()}
        assert runners.compare_outputs(rows, alone) == [], f"{net} row {row}"


def test_comparison_catches_a_wrong_result(tmp_path):
    """The tolerance is tight enough to see a one-element error of 1% of the
    output's scale, and loose enough for float32 summation-order noise."""
    rng = np.random.default_rng(SEED)
    expected = {"y": rng.standard_normal((4, 1000)).astype(np.float32)}
    noisy = {"y": expected["y"] * np.float32(1 + 3e-6)}
    assert runners.compare_outputs(noisy, expected) == []
    wrong = {"y": expected["y"].copy()}
    wrong["y"][2, 17] += np.float32(0.01 * np.abs(expected["y"]).max())
    problems = runners.compare_outputs(wrong, expected)
    assert len(problems) == 1 and "1 of 4000 elements differ" in problems[0], problems
    assert runners.compare_outputs({"y": expected["y"][:3]}, expected), "shape must be checked"
