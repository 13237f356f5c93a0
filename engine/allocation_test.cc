// Steady state allocates nothing of ours: after the first runs of a plan
// (which size oneDNN's and OpenMP's internal state), repeated Execute calls
// make no heap allocation on any thread for a network of the engine's own
// kernels, and for a network with oneDNN convolution primitives the count per
// run is a small constant: oneDNN's primitive execute builds a few small
// bookkeeping vectors per call, which its API gives no way to avoid. Counts
// every global operator new; its own binary so the replacement below affects
// no other test.
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "engine/aligned_buffer.h"
#include "engine/execution_plan.h"
#include "engine/model.h"
#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace {
std::atomic<int64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, std::align_val_t align) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const std::size_t a = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t size, std::align_val_t align,
                   const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const std::size_t a = static_cast<std::size_t>(align);
  return std::aligned_alloc(a, (size + a - 1) / a * a);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace coalesce {
namespace {

using testing::OnnxModelBuilder;

// With `onednn`: Conv (a oneDNN primitive) + BN + Relu + Flatten + Gemm
// (dnnl_sgemm). Without: the engine's own kernels only (BatchNormalization,
// Relu, broadcasting Mul and Add, Sigmoid, LayerNormalization, Softmax).
// Optimized as the server loads it.
std::string Network(bool onednn) {
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 8, 16, 16}).Output("y");
  for (const char* name : {"s", "bb", "m"})
    b.FloatInitializer(name, {8}, testing::RandomFloats(8, 2));
  b.FloatInitializer("v", {8}, std::vector<float>(8, 1.0f));
  if (onednn) {
    b.FloatInitializer("w", {8, 8, 3, 3}, testing::RandomFloats(576, 1));
    b.FloatInitializer("fc", {2048, 10}, testing::RandomFloats(20480, 3));
    testing::SetIntsAttr(b.Node("Conv", {"x", "w"}, {"c"}), "pads",
                         {1, 1, 1, 1});
    b.Node("BatchNormalization", {"c", "s", "bb", "m", "v"}, {"n"});
    b.Node("Relu", {"n"}, {"r"});
    b.Node("Flatten", {"r"}, {"f"});
    b.Node("Gemm", {"f", "fc"}, {"y"});
    return b.Serialize();
  }
  b.FloatInitializer("scale", {8, 1, 1}, testing::RandomFloats(8, 4));
  b.FloatInitializer("g", {16}, std::vector<float>(16, 1.0f));
  b.Node("BatchNormalization", {"x", "s", "bb", "m", "v"}, {"n"});
  b.Node("Relu", {"n"}, {"r"});
  b.Node("Mul", {"r", "scale"}, {"rs"});
  b.Node("Add", {"rs", "x"}, {"sum"});
  b.Node("Sigmoid", {"sum"}, {"sg"});
  b.Node("LayerNormalization", {"sg", "g"}, {"l"});
  b.Node("Softmax", {"l"}, {"y"});
  return b.Serialize();
}

// Allocations made by `runs` Execute calls of the network after 3 warm-ups.
int64_t CountAllocations(bool onednn, int runs) {
  auto model = Model::LoadFromBytes(Network(onednn));
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return -1;
  auto plan = ExecutionPlan::Build(*model, {{4, 8, 16, 16}});
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return -1;
  AlignedBuffer input, output, arena;
  EXPECT_TRUE(input.Reserve((*plan)->input_byte_size(0)).ok());
  EXPECT_TRUE(output.Reserve((*plan)->output_byte_size(0)).ok());
  EXPECT_TRUE(arena.Reserve((*plan)->arena_bytes()).ok());
  const std::vector<float> x = testing::RandomFloats(4 * 8 * 16 * 16, 4);
  std::copy(x.begin(), x.end(), reinterpret_cast<float*>(input.data()));
  const char* in[] = {input.data()};
  char* out[] = {output.data()};
  for (int warmup = 0; warmup < 3; ++warmup)
    EXPECT_TRUE((*plan)->Execute(in, out, arena.data()).ok());
  const int64_t before = g_allocations.load();
  for (int run = 0; run < runs; ++run)
    EXPECT_TRUE((*plan)->Execute(in, out, arena.data()).ok());
  return g_allocations.load() - before;
}

TEST(AllocationTest, EngineKernelsAllocateNothingPerRun) {
  EXPECT_EQ(CountAllocations(/*onednn=*/false, 50), 0);
}

// oneDNN's per-call bookkeeping is the same every run: 50 runs cost exactly
// five times 10 runs, and at most a handful per call (the optimized network
// makes 4: the FusedConv with its two layout reorders, and the sgemm).
TEST(AllocationTest, OneDnnCallsAllocateAConstantAmountPerRun) {
  const int64_t ten = CountAllocations(/*onednn=*/true, 10);
  const int64_t fifty = CountAllocations(/*onednn=*/true, 50);
  EXPECT_EQ(fifty, 5 * ten);
  EXPECT_LE(ten, 10 * 4 * 8);
}

}  // namespace
}  // namespace coalesce
