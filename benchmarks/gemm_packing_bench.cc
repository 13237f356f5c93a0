// The engine's MatMul path against the alternative it could take: oneDNN's
// dnnl_sgemm on plain row-major weights (what kernels/cpu/gemm.h calls,
// which packs B again on every call) against oneDNN's matmul primitive with
// the constant weights reordered once into the layout it chose, plus a bias,
// as a prepared kernel would hold them. Both at 2 intra-op threads.
//   Arguments: M, K, N (A is [M, K], B is [K, N]).
// Shapes: bert-base's projections and the MLP example's first layer, at
// 1 to 1024 rows.
#include <omp.h>

#include <vector>

#include "benchmark/benchmark.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;

constexpr int kThreads = 2;

void BM_SgemmPlainWeights(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  omp_set_num_threads(kThreads);
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  for (auto _ : state) {
    dnnl_sgemm('N', 'N', m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f,
               c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
}

void BM_MatMulPackedWeights(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  omp_set_num_threads(kThreads);
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n), bias(n, 1.0f);
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const auto f32 = memory::data_type::f32;
  const memory::desc a_md({m, k}, f32, memory::format_tag::ab);
  const memory::desc b_plain({k, n}, f32, memory::format_tag::ab);
  const memory::desc c_md({m, n}, f32, memory::format_tag::ab);
  const memory::desc bias_md({1, n}, f32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(
      dnnl::matmul::desc(a_md,
                         memory::desc({k, n}, f32, memory::format_tag::any),
                         bias_md, c_md),
      engine);
  memory b_user(b_plain, engine, b.data()), b_packed(pd.weights_desc(), engine);
  dnnl::reorder(b_user, b_packed).execute(stream, b_user, b_packed);
  stream.wait();
  const dnnl::matmul matmul(pd);
  memory a_mem(a_md, engine, a.data()), c_mem(c_md, engine, c.data()),
      bias_mem(bias_md, engine, bias.data());
  for (auto _ : state) {
    matmul.execute(stream, {{DNNL_ARG_SRC, a_mem},
                            {DNNL_ARG_WEIGHTS, b_packed},
                            {DNNL_ARG_BIAS, bias_mem},
                            {DNNL_ARG_DST, c_mem}});
    stream.wait();
    benchmark::DoNotOptimize(c.data());
  }
}

// Rows 1..1024 (batch x sequence, or batch) on bert-base's projection and
// MLP shapes: where packing pays is a question of M.
void Shapes(benchmark::internal::Benchmark* b) {
  for (int64_t m : {1, 8, 32, 64, 128, 256, 512, 1024}) {
    b->Args({m, 768, 768})->Args({m, 768, 3072})->Args({m, 3072, 768});
    b->Args({m, 1024, 2048});
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_SgemmPlainWeights)->Apply(Shapes);
BENCHMARK(BM_MatMulPackedWeights)->Apply(Shapes);

}  // namespace

BENCHMARK_MAIN();
