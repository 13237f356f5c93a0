// Per-batch run time of the MLP example ([B,1024] -> Gemm 2048 -> Relu ->
// Gemm 2048 -> Relu -> Gemm 1000 -> Softmax) on the CPU executor, through the
// full SetInputShapes / CopyIn / Run / CopyOut protocol.
//   Arguments: batch size, intra-op threads.
#include <cstring>
#include <memory>

#include "benchmark/benchmark.h"
#include "engine/cpu_executor.h"
#include "engine/model.h"
#include "engine/testing/onnx_model_builder.h"

namespace coalesce {
namespace {

std::shared_ptr<const Model> MlpModel() {
  static const std::shared_ptr<const Model> model = [] {
    auto m = Model::LoadFromBytes(
        testing::BuildMlpModel(1024, 2048, 1000, /*seed=*/1));
    return m.ok() ? *m : nullptr;
  }();
  return model;
}

void BM_MlpBatch(benchmark::State& state) {
  const int64_t batch = state.range(0);
  auto model = MlpModel();
  auto exec = CreateCpuExecutor(
      model,
      {.intra_op_threads = static_cast<int>(state.range(1)), .num_slots = 1});
  if (model == nullptr || !exec.ok()) {
    state.SkipWithError("cannot create the executor");
    return;
  }
  BatchSlot* slot = (*exec)->slot(0);
  const auto input = testing::RandomFloats(batch * 1024, 7);
  for (auto _ : state) {
    if (!slot->SetInputShapes({{batch, 1024}}).ok()) {
      state.SkipWithError("SetInputShapes failed");
      return;
    }
    std::memcpy(slot->input_data(0), input.data(),
                input.size() * sizeof(float));
    (*exec)->CopyIn(slot);
    (*exec)->Run(slot);
    if (!(*exec)->CopyOut(slot)->Wait().ok()) {
      state.SkipWithError("run failed");
      return;
    }
    benchmark::DoNotOptimize(slot->output_data(0));
  }
  state.counters["rows/s"] =
      benchmark::Counter(static_cast<double>(batch),
                         benchmark::Counter::kIsIterationInvariantRate);
  state.counters["us/row"] =
      benchmark::Counter(static_cast<double>(batch),
                         benchmark::Counter::kIsIterationInvariantRate |
                             benchmark::Counter::kInvert);
}

BENCHMARK(BM_MlpBatch)
    ->ArgNames({"batch", "threads"})
    ->ArgsProduct({{1, 8, 64}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace coalesce

BENCHMARK_MAIN();
