#!/usr/bin/env python3
"""cold_start.py's arithmetic on hand-written coalesce-bench output: the
first window against the later ones, time-weighted throughput, the setup
batch count from a metrics page, the load line."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cold_start  # noqa: E402


def window(seconds, items_per_s, p99):
    return {"duration_s": seconds, "throughput_infer_per_s": items_per_s,
            "latency_ms": {"p99": p99}}


def served_config_fixes_the_served_dims() -> None:
    """The config of a model with a variable sequence dim: -1 as the model
    says, or the served length where the caller gives it (warm-up prepares
    batch sizes only when every non-batch dim is fixed)."""
    import gpu_bench
    from onnx import TensorProto, helper
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])
    out = helper.make_tensor_value_info("y", TensorProto.INT64, ["batch", "seq"])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Identity", ["input_ids"], ["y"])], "g", [ids], [out]))
    dynamic = gpu_bench.served_config("m", model, "fp16", 64)
    fixed = gpu_bench.served_config("m", model, "fp16", 64, {"input_ids": (128,)})
    assert 'name: "input_ids" data_type: TYPE_INT64 dims: [-1]' in dynamic, dynamic
    assert 'name: "input_ids" data_type: TYPE_INT64 dims: [128]' in fixed, fixed
    assert 'name: "y" data_type: TYPE_INT64 dims: [-1]' in fixed, fixed
    assert "token_packing" not in fixed, fixed
    packed = gpu_bench.served_config("m", model, "fp16", 64, {"input_ids": (128,)},
                                     packing=True)
    assert 'key: "token_packing" value: { string_value: "true" }' in packed, packed
    assert gpu_bench.served_variants({"input_ids": 0, "attention_mask": 0}) == [
        ("fp32", False), ("fp16", False), ("fp16", True)]
    assert gpu_bench.served_variants({"pixel_values": 0}) == [("fp32", False), ("fp16", False)]
    assert gpu_bench.served_name("bert-hf-s128", "fp16", True) == "bert_hf_s128_fp16_packed"


def main() -> int:
    bench = {"levels": [{"windows": [window(10, 100, 30.0), window(10, 200, 8.0),
                                     window(20, 500, 12.0), window(10, 300, 10.0)],
                         "summary": {"server": {"avg_batch_size": 23.6}}}]}
    row = cold_start.row_from_levels(bench)
    # Windows 2-4: (10*200 + 20*500 + 10*300) / 40 s = 375 items/s.
    assert abs(row.items_per_s - 375.0) < 1e-9, row
    assert row.first_p99_ms == 30.0 and row.steady_p99_ms == 10.0, row
    assert abs(row.p99_ratio - 3.0) < 1e-9 and row.avg_batch == 23.6, row
    assert cold_start.verdict(row.p99_ratio <= cold_start.P99_TARGET) == "MISSED"
    try:
        cold_start.row_from_levels({"levels": [{"windows": [window(10, 1, 1.0)]}]})
        raise AssertionError("one window was accepted")
    except ValueError:
        pass
    metrics = "\n".join([
        "# TYPE coalesce_setup_batches_total counter",
        'coalesce_setup_batches_total{model="bert_fp16",model_instance="0",version="1"} 2',
        'coalesce_setup_batches_total{model="bert_fp16",model_instance="1",version="1"} 1',
        'coalesce_setup_batches_total{model="bert_fp32",model_instance="0",version="1"} 7'])
    assert cold_start.setup_batches(metrics, "bert_fp16") == 3.0
    assert cold_start.setup_batches(metrics, "resnet") == 0.0
    log = ("info model 'bert_fp16' version 1: parse and optimize 0.5 s, 1 instance(s) "
           "created in 0.2 s, warm-up 4.250 s (14 batch(es) run; 0 model_warmup sample(s))")
    assert cold_start.load_seconds(log, "bert_fp16") == "4.250 s"
    assert cold_start.load_seconds(log, "other") == "?"
    served_config_fixes_the_served_dims()
    print("cold_start_test: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
