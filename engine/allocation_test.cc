// Steady state allocates nothing of ours: after the first runs of a plan
// (which size oneDNN's and OpenMP's internal state), repeated Execute calls
// make no heap allocation on any thread for networks of the engine's own
// kernels (every operator that copies or moves elements included), and for a
// network with oneDNN primitives (convolutions, and Transposes of float
// tensors of 32768 elements or more, which run as oneDNN reorders) the count
// per run is a small constant: oneDNN's primitive execute builds a few small
// bookkeeping vectors per call, which its API gives no way to avoid. Counts
// every global operator new (engine/testing/counting_allocator.h).
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/aligned_buffer.h"
#include "engine/execution_plan.h"
#include "engine/model.h"
#include "engine/testing/counting_allocator.h"
#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::OnnxModelBuilder;

// With `onednn`: Conv (a oneDNN primitive) + BN + Relu, a second Conv with
// the first one's result added (a residual: FusedConv with Z) + Flatten +
// Gemm (dnnl_sgemm). Without: the engine's own kernels only
// (BatchNormalization, Relu, broadcasting Mul and Add, Sigmoid,
// LayerNormalization, Softmax). Optimized as the server loads it.
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
    b.FloatInitializer("w2", {8, 8, 3, 3}, testing::RandomFloats(576, 5));
    testing::SetIntsAttr(b.Node("Conv", {"r", "w2"}, {"c2"}), "pads",
                         {1, 1, 1, 1});
    b.Node("Add", {"c2", "r"}, {"res"});
    b.Node("Flatten", {"res"}, {"f"});
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

// The ops that move elements with computed strides: Pad, Slice (with a
// negative step), Resize, Transpose, Concat, Gather, Expand.
std::string CopyNetwork() {
  OnnxModelBuilder b(17);
  b.Input("x", {-1, 8, 16, 16}).Output("y");
  b.Int64Initializer("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  b.Node("Pad", {"x", "pads"}, {"p"});  // [N, 8, 18, 18]
  b.Int64Initializer("starts", {2}, {17, 1});
  b.Int64Initializer("ends", {2}, {0, 17});
  b.Int64Initializer("axes", {2}, {2, 3});
  b.Int64Initializer("steps", {2}, {-1, 1});
  b.Node("Slice", {"p", "starts", "ends", "axes", "steps"}, {"s"});  // 17x16
  b.FloatInitializer("scales", {4}, {1, 1, 0.5f, 1});
  auto& resize = b.Node("Resize", {"s", "", "scales"}, {"r"});  // 8x16
  testing::SetStringAttr(resize, "mode", "linear");
  auto& transpose = b.Node("Transpose", {"r"}, {"t"});  // [N, 8, 16, 8]
  testing::SetIntsAttr(transpose, "perm", {0, 1, 3, 2});
  testing::SetIntAttr(b.Node("Concat", {"t", "t"}, {"c"}), "axis", 3);
  b.Int64Initializer("idx", {3}, {0, 5, 2});
  testing::SetIntAttr(b.Node("Gather", {"c", "idx"}, {"g"}), "axis", 1);
  b.Int64Initializer("shape", {4}, {1, 3, 16, 16});
  b.Node("Expand", {"g", "shape"}, {"e"});
  b.Node("Relu", {"e"}, {"y"});
  return b.Serialize();
}

// The other copying ops: Pad's reflect, edge (with an axes input) and
// constant_value forms, Split, DepthToSpace, SpaceToDepth, Tile, and the
// reshaping copies (Reshape, Unsqueeze, Squeeze, Flatten, Identity).
std::string MoreCopyNetwork() {
  OnnxModelBuilder b(18);
  b.Input("x", {-1, 8, 16, 16}).Output("y");
  b.Int64Initializer("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  auto& reflect = b.Node("Pad", {"x", "pads"}, {"pr"});  // [N, 8, 18, 18]
  testing::SetStringAttr(reflect, "mode", "reflect");
  b.Int64Initializer("edge_pads", {2}, {1, 1});
  b.Int64Initializer("edge_axes", {1}, {3});
  auto& edge = b.Node("Pad", {"pr", "edge_pads", "", "edge_axes"}, {"pe"});
  testing::SetStringAttr(edge, "mode", "edge");  // [N, 8, 18, 20]
  b.Int64Initializer("row_pads", {8}, {0, 0, 1, 0, 0, 0, 1, 0});
  b.FloatInitializer("value", {}, {0.5f});
  b.Node("Pad", {"pe", "row_pads", "value"}, {"pc"});  // [N, 8, 20, 20]
  auto& split = b.Node("Split", {"pc"}, {"a", "b"});   // 2x [N, 4, 20, 20]
  testing::SetIntAttr(split, "axis", 1);
  testing::SetIntAttr(split, "num_outputs", 2);
  auto& to_space = b.Node("DepthToSpace", {"b"}, {"d"});  // [N, 1, 40, 40]
  testing::SetIntAttr(to_space, "blocksize", 2);
  auto& to_depth = b.Node("SpaceToDepth", {"d"}, {"sd"});  // [N, 4, 20, 20]
  testing::SetIntAttr(to_depth, "blocksize", 2);
  testing::SetIntAttr(b.Node("Concat", {"a", "sd"}, {"c"}), "axis", 3);
  b.Int64Initializer("repeats", {4}, {1, 1, 1, 2});
  b.Node("Tile", {"c", "repeats"}, {"t"});  // [N, 4, 20, 80]
  b.Int64Initializer("shape", {3}, {0, 4, 1600});
  b.Node("Reshape", {"t", "shape"}, {"rs"});
  b.Int64Initializer("axis1", {1}, {1});
  b.Node("Unsqueeze", {"rs", "axis1"}, {"u"});  // [N, 1, 4, 1600]
  b.Node("Squeeze", {"u", "axis1"}, {"q"});
  b.Node("Flatten", {"q"}, {"f"});  // [N, 6400]
  b.Node("Identity", {"f"}, {"y"});
  return b.Serialize();
}

// `network` loaded (and optimized) as the server loads it, planned for
// [4, 8, 16, 16].
absl::StatusOr<std::shared_ptr<const ExecutionPlan>> BuildPlan(
    const std::string& network) {
  auto model = Model::LoadFromBytes(network);
  if (!model.ok()) return model.status();
  return ExecutionPlan::Build(*model, {{4, 8, 16, 16}});
}

// The op types a plan of `network` runs in Execute (not folded).
std::set<std::string> ExecutedOps(const std::string& network) {
  auto plan = BuildPlan(network);
  EXPECT_TRUE(plan.ok()) << plan.status();
  std::set<std::string> ops;
  if (!plan.ok()) return ops;
  for (const PlanNode& node : (*plan)->neutral().nodes)
    if (!node.folded) ops.insert(*node.op_type);
  return ops;
}

// Allocations made by `runs` Execute calls of `network` after 3 warm-ups.
int64_t CountAllocations(const std::string& network, int runs) {
  auto plan = BuildPlan(network);
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
  const int64_t before = testing::HeapAllocations();
  for (int run = 0; run < runs; ++run)
    EXPECT_TRUE((*plan)->Execute(in, out, arena.data()).ok());
  return testing::HeapAllocations() - before;
}

TEST(AllocationTest, EngineKernelsAllocateNothingPerRun) {
  EXPECT_EQ(CountAllocations(Network(/*onednn=*/false), 50), 0);
}

// ExecutionPlan::Execute promises no allocation: the strided copies too.
TEST(AllocationTest, CopyingOpsAllocateNothingPerRun) {
  EXPECT_EQ(CountAllocations(CopyNetwork(), 50), 0);
}

TEST(AllocationTest, MoreCopyingOpsAllocateNothingPerRun) {
  EXPECT_EQ(CountAllocations(MoreCopyNetwork(), 50), 0);
}

// The two copy networks run every copying op at Execute (none is folded or
// optimized away), so the counts above cover them all.
TEST(AllocationTest, CopyNetworksRunEveryCopyingOp) {
  std::set<std::string> ran = ExecutedOps(CopyNetwork());
  ran.merge(ExecutedOps(MoreCopyNetwork()));
  for (const char* op :
       {"Pad", "Slice", "Split", "Resize", "Transpose", "Concat", "Gather",
        "Expand", "Tile", "DepthToSpace", "SpaceToDepth", "Reshape",
        "Unsqueeze", "Squeeze", "Flatten", "Identity"}) {
    EXPECT_TRUE(ran.contains(op)) << op << " does not run";
  }
}

// oneDNN's per-call bookkeeping is the same every run: 50 runs cost exactly
// five times 10 runs, and at most a handful per call (the optimized network
// makes 3: the two FusedConvs, channels-last, and the sgemm; its two small
// Transposes are the engine's own).
TEST(AllocationTest, OneDnnCallsAllocateAConstantAmountPerRun) {
  const int64_t ten = CountAllocations(Network(/*onednn=*/true), 10);
  const int64_t fifty = CountAllocations(Network(/*onednn=*/true), 50);
  EXPECT_EQ(fifty, 5 * ten);
  EXPECT_LE(ten, 10 * 3 * 8);
}

}  // namespace
}  // namespace coalesce
