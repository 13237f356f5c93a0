// FindAttention (attention_pattern.h) on the two ways PyTorch's exporters
// spell attention, built here, where each site found is then computed from
// its strides alone and compared with the CPU engine's output of the same
// graph; on perturbed graphs that must not fuse; and on the corpus of real
// exports (tests/models/real/), where every attention softmax must be found.
#include "engine/attention_pattern.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/execution_plan.h"
#include "engine/model.h"
#include "engine/neutral_planner.h"
#include "engine/testing/onnx_model_builder.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using testing::HostTensor;
using testing::OnnxModelBuilder;

constexpr int64_t kB = 2, kS = 5, kH = 3, kD = 4, kE = kH * kD;

struct Variant {
  bool dynamo_k = false;           // K transposed through [B*H, S, D] reshapes
  bool mask = true;                // an additive [B, 1, 1, S] mask
  bool guard = true;               // Where(IsNaN(p), 0, p)
  float guard_value = 0.0f;        // the guard's replacement
  int64_t softmax_axis = -1;       // Softmax's axis
  bool vector_scale = false;       // Q's factor a [D] vector, not a scalar
  bool scale_after_mask = false;   // a factor between the mask Add and Softmax
  bool softmax_is_output = false;  // p is also a model output
  // q, k and v are one Split of a packed [B, S, 3E] input "qkv"; with
  // split_extra, the Split has a fourth output that is a model output.
  bool packed = false;
  bool split_extra = false;
  // q, k and v are entries 0, 1, 2 of a sequence-first packed input "qkv"
  // [S, B, 3E], as nn.MultiheadAttention's exports take them: Reshape to
  // [S, B, 3, E], Unsqueeze, Transpose to [3, S, B, 1, E], Squeeze, one
  // Gather per entry, each then transposed to [B, S, E]. With
  // gather_extra, a fourth Gather of the same value is a model output.
  bool gathered = false;
  bool gather_extra = false;
  // With gathered: "qkv" is computed, not an input: x [B, S, E] transposed
  // to [S, B, E], times a [E, 3E] weight (the in-projection). With
  // rows_extra, that product is also a model output.
  bool transposed_rows = false;
  bool rows_extra = false;
  // The merge as nn.MultiheadAttention's exports spell it: [S * B, E]
  // rows into an out-projection by a [E, E] weight, then [S, B, E]
  // transposed to y [B, S, E]. With merged_extra, the [S, B, E] value is
  // also a model output.
  bool projected_merge = false;
  bool merged_extra = false;
};

// Attention over inputs q, k, v [B, S, E] (and mask), output y [B, S, E].
std::shared_ptr<const Model> AttentionModel(const Variant& v) {
  OnnxModelBuilder b(17);
  if (v.packed) {
    const int64_t extra = v.split_extra ? 1 : 0;
    b.Input("qkv", {kB, kS, 3 * kE + extra});
    std::vector<int64_t> sizes = {kE, kE, kE};
    std::vector<std::string> outs = {"q", "k", "v"};
    if (v.split_extra) {
      sizes.push_back(1);
      outs.push_back("rest");
    }
    b.Int64Initializer("sizes", {static_cast<int64_t>(sizes.size())}, sizes);
    testing::SetIntAttr(b.Node("Split", {"qkv", "sizes"}, outs), "axis", -1);
  } else if (v.gathered) {
    if (v.transposed_rows) {
      b.Input("x", {kB, kS, kE});
      b.FloatInitializer("w_in", {kE, 3 * kE},
                         testing::RandomFloats(kE * 3 * kE, 9));
      testing::SetIntsAttr(b.Node("Transpose", {"x"}, {"xt"}), "perm",
                           {1, 0, 2});
      b.Node("MatMul", {"xt", "w_in"}, {"qkv"});
      if (v.rows_extra) b.Output("qkv");
    } else {
      b.Input("qkv", {kS, kB, 3 * kE});
    }
    b.Int64Initializer("sb3e", {4}, {kS, kB, 3, kE});
    b.Int64Initializer("ax0", {1}, {0});
    b.Int64Initializer("ax3", {1}, {3});
    b.Node("Reshape", {"qkv", "sb3e"}, {"p4"});
    b.Node("Unsqueeze", {"p4", "ax0"}, {"p5"});
    testing::SetIntsAttr(b.Node("Transpose", {"p5"}, {"p5t"}), "perm",
                         {3, 1, 2, 0, 4});
    b.Node("Squeeze", {"p5t", "ax3"}, {"packed"});
    const char* const names[] = {"q", "k", "v"};
    for (int64_t i = 0; i < 3; ++i) {
      const std::string entry = std::string(names[i]) + "_entry";
      b.Int64Initializer(entry, {}, {i});
      testing::SetIntAttr(
          b.Node("Gather", {"packed", entry}, {std::string(names[i]) + "sb"}),
          "axis", 0);
      testing::SetIntsAttr(
          b.Node("Transpose", {std::string(names[i]) + "sb"}, {names[i]}),
          "perm", {1, 0, 2});
    }
    if (v.gather_extra)
      testing::SetIntAttr(b.Node("Gather", {"packed", "q_entry"}, {"rest"}),
                          "axis", 0);
  } else {
    b.Input("q", {kB, kS, kE}).Input("k", {kB, kS, kE});
    b.Input("v", {kB, kS, kE});
  }
  if (v.mask) b.Input("mask", {kB, 1, 1, kS});
  b.Int64Initializer("split", {4}, {kB, kS, kH, kD});
  b.Int64Initializer("merge", {3}, {kB, kS, kE});
  b.Int64Initializer("bh", {3}, {kB * kH, kS, kD});
  b.Int64Initializer("bhT", {4}, {kB, kH, kD, kS});
  b.FloatInitializer("c1", {}, {0.5f});
  b.FloatInitializer("c2", {}, {0.75f});
  b.FloatInitializer("cv", {kD}, {0.5f, 0.5f, 0.5f, 0.25f});
  b.FloatInitializer("zero", {}, {v.guard_value});
  auto heads = [&](const std::string& x, const std::vector<int64_t>& perm) {
    b.Node("Reshape", {x, "split"}, {x + "4"});
    testing::SetIntsAttr(b.Node("Transpose", {x + "4"}, {x + "t"}), "perm",
                         perm);
    return x + "t";
  };
  const std::string qh = heads("q", {0, 2, 1, 3});
  b.Node("Mul", {qh, v.vector_scale ? "cv" : "c1"}, {"qs"});
  std::string kt;
  if (v.dynamo_k) {
    const std::string kh = heads("k", {0, 2, 1, 3});
    b.Node("Reshape", {kh, "bh"}, {"k3"});
    testing::SetIntsAttr(b.Node("Transpose", {"k3"}, {"k3t"}), "perm",
                         {0, 2, 1});
    b.Node("Reshape", {"k3t", "bhT"}, {"kT"});
    kt = "kT";
  } else {
    kt = heads("k", {0, 2, 3, 1});
  }
  b.Node("Mul", {kt, "c2"}, {"ks"});
  const std::string vh = heads("v", {0, 2, 1, 3});
  b.Node("MatMul", {"qs", "ks"}, {"s"});
  std::string x = "s";
  if (v.mask) {
    b.Node("Add", {x, "mask"}, {"sm"});
    x = "sm";
  }
  if (v.scale_after_mask) {
    b.Node("Mul", {x, "c1"}, {"sx"});
    x = "sx";
  }
  testing::SetIntAttr(b.Node("Softmax", {x}, {"p"}), "axis", v.softmax_axis);
  std::string p = "p";
  if (v.guard) {
    b.Node("IsNaN", {"p"}, {"nan"});
    b.Node("Where", {"nan", "zero", "p"}, {"pg"});
    p = "pg";
  }
  b.Node("MatMul", {p, vh}, {"o"});
  if (v.projected_merge) {
    b.Int64Initializer("rows_e", {2}, {kS * kB, kE});
    b.Int64Initializer("s_b_e", {3}, {kS, kB, kE});
    b.FloatInitializer("w_out", {kE, kE}, testing::RandomFloats(kE * kE, 10));
    testing::SetIntsAttr(b.Node("Transpose", {"o"}, {"ot"}), "perm",
                         {2, 0, 1, 3});
    b.Node("Reshape", {"ot", "rows_e"}, {"rows"});
    b.Node("MatMul", {"rows", "w_out"}, {"proj"});
    b.Node("Reshape", {"proj", "s_b_e"}, {"sbe"});
    testing::SetIntsAttr(b.Node("Transpose", {"sbe"}, {"bse"}), "perm",
                         {1, 0, 2});
    b.Node("Relu", {"bse"}, {"y"});  // a model output is no view
    if (v.merged_extra) b.Output("sbe");
  } else {
    testing::SetIntsAttr(b.Node("Transpose", {"o"}, {"ot"}), "perm",
                         {0, 2, 1, 3});
    b.Node("Reshape", {"ot", "merge"}, {"y"});
  }
  b.Output("y");
  if (v.softmax_is_output) b.Output("p");
  if (v.split_extra || v.gather_extra) b.Output("rest");
  auto model = b.Load();
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *model : nullptr;
}

std::vector<HostTensor> Inputs(const Variant& v) {
  std::vector<HostTensor> in;
  if (v.packed) {
    const int64_t e = 3 * kE + (v.split_extra ? 1 : 0);
    in.push_back({{kB, kS, e}, testing::RandomFloats(kB * kS * e, 1)});
  } else if (v.gathered && v.transposed_rows) {
    in.push_back({{kB, kS, kE}, testing::RandomFloats(kB * kS * kE, 1)});
  } else if (v.gathered) {
    in.push_back(
        {{kS, kB, 3 * kE}, testing::RandomFloats(kB * kS * 3 * kE, 1)});
  } else {
    for (uint64_t seed = 1; seed <= 3; ++seed)
      in.push_back({{kB, kS, kE}, testing::RandomFloats(kB * kS * kE, seed)});
  }
  if (v.mask) {
    std::vector<float> mask(kB * kS, 0.0f);
    mask[kS - 1] = -INFINITY;             // image 0: last key padded
    mask[kS + 1] = mask[kS + 2] = -1e4f;  // image 1: two keys down-weighted
    in.push_back({{kB, 1, 1, kS}, mask});
  }
  return in;
}

std::vector<AttentionSite> Sites(const std::shared_ptr<const Model>& model,
                                 std::shared_ptr<const NeutralPlan>* plan) {
  std::vector<Shape> shapes;
  for (const TensorSpec& spec : model->signature().inputs)
    shapes.push_back(spec.dims);
  auto built = MakeNeutralPlanner(model)(shapes);
  EXPECT_TRUE(built.ok()) << built.status();
  if (!built.ok()) return {};
  *plan = *built;
  return FindAttention(**built);
}

// The site computed from its strides alone, on the model inputs' data.
std::vector<float> FromStrides(const NeutralPlan& plan, const AttentionSite& s,
                               const std::vector<HostTensor>& inputs) {
  auto data = [&](const AttentionOperand& o) -> const float* {
    auto at = std::find(plan.inputs.begin(), plan.inputs.end(), o.value);
    EXPECT_NE(at, plan.inputs.end()) << "operand is not a model input";
    return at == plan.inputs.end()
               ? nullptr
               : inputs[at - plan.inputs.begin()].data.data() + o.offset;
  };
  auto at = [](const AttentionOperand& o, int64_t b, int64_t h, int64_t r,
               int64_t c) {
    return b * o.strides[0] + h * o.strides[1] + r * o.strides[2] +
           c * o.strides[3];
  };
  const float *q = data(s.q), *k = data(s.k), *v = data(s.v);
  const float* mask = s.mask.value >= 0 ? data(s.mask) : nullptr;
  if (!q || !k || !v) return {};
  std::vector<float> out(s.batch * s.heads * s.q_len * s.head_dim);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.q_len; ++i) {
        std::vector<float> p(s.kv_len);
        float max = -INFINITY, sum = 0.0f;
        for (int64_t j = 0; j < s.kv_len; ++j) {
          float dot = 0.0f;
          for (int64_t d = 0; d < s.head_dim; ++d)
            dot += q[at(s.q, b, h, i, d)] * k[at(s.k, b, h, j, d)];
          p[j] = s.scale * dot + (mask ? mask[at(s.mask, b, h, i, j)] : 0.0f);
          max = std::max(max, p[j]);
        }
        for (float& x : p) sum += x = std::exp(x - max);
        for (int64_t d = 0; d < s.head_dim; ++d) {
          float acc = 0.0f;
          for (int64_t j = 0; j < s.kv_len; ++j)
            acc += p[j] / sum * v[at(s.v, b, h, j, d)];
          out[at(s.out, b, h, i, d)] = acc;
        }
      }
  return out;
}

void ExpectFusedAndRight(const Variant& v, float scale) {
  std::shared_ptr<const Model> model = AttentionModel(v);
  ASSERT_NE(model, nullptr);
  std::shared_ptr<const NeutralPlan> plan;
  const std::vector<AttentionSite> sites = Sites(model, &plan);
  ASSERT_EQ(sites.size(), 1u);
  const AttentionSite& s = sites[0];
  EXPECT_EQ(s.batch, kB);
  EXPECT_EQ(s.heads, kH);
  EXPECT_EQ(s.q_len, kS);
  EXPECT_EQ(s.kv_len, kS);
  EXPECT_EQ(s.head_dim, kD);
  EXPECT_FLOAT_EQ(s.scale, scale);
  EXPECT_EQ(s.zero_masked_rows, v.guard);
  EXPECT_EQ(s.mask.value >= 0, v.mask);
  EXPECT_EQ(s.out.value, plan->outputs[0]);
  const std::vector<HostTensor> inputs = Inputs(v);
  auto engine = testing::RunModelOnce(model, inputs);
  ASSERT_TRUE(engine.ok()) << engine.status();
  const std::vector<float> fused = FromStrides(*plan, s, inputs);
  ASSERT_EQ(fused.size(), (*engine)[0].data.size());
  for (size_t i = 0; i < fused.size(); ++i)
    ASSERT_NEAR(fused[i], (*engine)[0].data[i], 1e-5) << "element " << i;
}

TEST(AttentionPatternTest, TorchScriptFormFusesWithStrides) {
  ExpectFusedAndRight({}, 0.5f * 0.75f);
}

TEST(AttentionPatternTest, DynamoTransposedKeyFusesWithStrides) {
  ExpectFusedAndRight({.dynamo_k = true}, 0.5f * 0.75f);
}

TEST(AttentionPatternTest, NoMaskNoGuard) {
  ExpectFusedAndRight({.mask = false, .guard = false}, 0.5f * 0.75f);
}

// GPT-2's packed projection: the Split is absorbed, q, k and v are views
// at offsets 0, E and 2E of its input.
TEST(AttentionPatternTest, PackedQkvSplitIsAbsorbed) {
  ExpectFusedAndRight({.packed = true}, 0.5f * 0.75f);
  std::shared_ptr<const NeutralPlan> plan;
  const std::vector<AttentionSite> sites =
      Sites(AttentionModel({.packed = true}), &plan);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].q.value, plan->inputs[0]);
  EXPECT_EQ(sites[0].k.value, plan->inputs[0]);
  EXPECT_EQ(sites[0].v.value, plan->inputs[0]);
  EXPECT_EQ(sites[0].q.offset, 0);
  EXPECT_EQ(sites[0].k.offset, kE);
  EXPECT_EQ(sites[0].v.offset, 2 * kE);
  EXPECT_EQ(sites[0].q.strides[2], 3 * kE);  // a row of the packed input
  const PlanNode& first = plan->nodes[sites[0].nodes.front()];
  EXPECT_EQ(*first.op_type, "Split");
}

// A Split with an output outside the site stays a node: the site reads
// its three outputs as values of their own.
TEST(AttentionPatternTest, SplitWithOtherOutputsStays) {
  std::shared_ptr<const NeutralPlan> plan;
  const std::vector<AttentionSite> sites =
      Sites(AttentionModel({.packed = true, .split_extra = true}), &plan);
  ASSERT_EQ(sites.size(), 1u);
  for (int n : sites[0].nodes) EXPECT_NE(*plan->nodes[n].op_type, "Split");
  EXPECT_NE(sites[0].q.value, plan->inputs[0]);
  EXPECT_NE(sites[0].q.value, sites[0].k.value);
  EXPECT_EQ(sites[0].q.offset, 0);
  EXPECT_EQ(sites[0].k.offset, 0);
  EXPECT_EQ(sites[0].q.strides[2], kE);
}

// nn.MultiheadAttention's packed projection (torchvision's ViT): the
// Gathers of its entries and the moves before them are absorbed, q, k and
// v are views of the sequence-first packed input at offsets 0, E and 2E.
TEST(AttentionPatternTest, GatheredEntriesOfAPackedProjectionAreAbsorbed) {
  ExpectFusedAndRight({.gathered = true}, 0.5f * 0.75f);
  std::shared_ptr<const NeutralPlan> plan;
  const std::vector<AttentionSite> sites =
      Sites(AttentionModel({.gathered = true}), &plan);
  ASSERT_EQ(sites.size(), 1u);
  const AttentionSite& s = sites[0];
  EXPECT_EQ(s.q.value, plan->inputs[0]);
  EXPECT_EQ(s.k.value, plan->inputs[0]);
  EXPECT_EQ(s.v.value, plan->inputs[0]);
  EXPECT_EQ(s.q.offset, 0);
  EXPECT_EQ(s.k.offset, kE);
  EXPECT_EQ(s.v.offset, 2 * kE);
  EXPECT_EQ(s.q.strides[0], 3 * kE);       // batch: a row of [S, B, 3E]
  EXPECT_EQ(s.q.strides[2], kB * 3 * kE);  // position: B rows on
  int gathers = 0;
  for (int n : s.nodes) gathers += *plan->nodes[n].op_type == "Gather";
  EXPECT_EQ(gathers, 3);
}

// The packed projection computed from rows transposed to [S, B, E] before
// it: the site reads the product's rows in x's order ([B, S, 3E]), and the
// Transpose is a row view (moving nothing) while the product still runs.
TEST(AttentionPatternTest, RowsTransposedBeforeTheProjectionAreAView) {
  std::shared_ptr<const NeutralPlan> plan;
  const std::vector<AttentionSite> sites =
      Sites(AttentionModel({.gathered = true, .transposed_rows = true}), &plan);
  ASSERT_EQ(sites.size(), 1u);
  const AttentionSite& s = sites[0];
  ASSERT_EQ(s.row_views.size(), 1u);
  const PlanNode& transpose = plan->nodes[s.row_views[0]];
  EXPECT_EQ(*transpose.op_type, "Transpose");
  EXPECT_EQ(transpose.inputs[0], plan->inputs[0]);
  EXPECT_EQ(std::count(s.nodes.begin(), s.nodes.end(), s.row_views[0]), 0);
  EXPECT_EQ(s.q.value, s.k.value);
  EXPECT_EQ(s.k.offset, kE);
  EXPECT_EQ(s.v.offset, 2 * kE);
  EXPECT_EQ(s.q.strides[0], kS * 3 * kE);  // batch: S rows of x's order
  EXPECT_EQ(s.q.strides[2], 3 * kE);       // position: the next row
  for (int n : s.nodes) {                  // the product still runs
    const PlanNode& node = plan->nodes[n];
    EXPECT_FALSE(*node.op_type == "MatMul" && node.outputs[0] == s.q.value);
  }
}

// The product is also a model output: its rows stay in [S, B] order, the
// Transpose copies, and the site reads the product as it is.
TEST(AttentionPatternTest, RowsReadElsewhereKeepTheirTranspose) {
  std::shared_ptr<const NeutralPlan> plan;
  const std::vector<AttentionSite> sites = Sites(
      AttentionModel(
          {.gathered = true, .transposed_rows = true, .rows_extra = true}),
      &plan);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_TRUE(sites[0].row_views.empty());
  EXPECT_EQ(sites[0].q.strides[0], 3 * kE);       // batch: [S, B, 3E]
  EXPECT_EQ(sites[0].q.strides[2], kB * 3 * kE);  // position
}

// The head merge into an out-projection whose result is transposed back
// to [B, S, E]: the site writes the rows in [B, S] order (out strides:
// batch S * E, position E), so the Transpose after the projection is a
// row view, moving nothing, and y is the projection's result as it lies.
TEST(AttentionPatternTest, MergedRowsAreWrittenInTheOrderTheTransposeGives) {
  std::shared_ptr<const NeutralPlan> plan;
  const std::vector<AttentionSite> sites =
      Sites(AttentionModel({.projected_merge = true}), &plan);
  ASSERT_EQ(sites.size(), 1u);
  const AttentionSite& s = sites[0];
  ASSERT_EQ(s.row_views.size(), 1u);
  const PlanNode& transpose = plan->nodes[s.row_views[0]];
  EXPECT_EQ(*transpose.op_type, "Transpose");
  const auto relu =
      std::find_if(plan->nodes.begin(), plan->nodes.end(),
                   [](const PlanNode& n) { return *n.op_type == "Relu"; });
  ASSERT_NE(relu, plan->nodes.end());
  EXPECT_EQ(relu->inputs[0], transpose.outputs[0]);  // the one before y
  EXPECT_EQ(s.out.strides[0], kS * kE);              // batch
  EXPECT_EQ(s.out.strides[1], kD);                   // head
  EXPECT_EQ(s.out.strides[2], kE);                   // position: the next row
}

// The CPU plan runs both row views' sites fused (engine/cpu_attention.h):
// the Transposes move nothing but bytes, the projections run on rows in the
// other order, and the outputs are the node-by-node plan's.
TEST(AttentionPatternTest, CpuPlanFusesSitesWithRowViews) {
  for (const Variant& v : {Variant{.gathered = true, .transposed_rows = true},
                           Variant{.projected_merge = true}}) {
    std::shared_ptr<const Model> model = AttentionModel(v);
    ASSERT_NE(model, nullptr);
    const std::vector<HostTensor> inputs = Inputs(v);
    std::vector<Shape> shapes;
    for (const HostTensor& t : inputs) shapes.push_back(t.shape);
    auto plan = ExecutionPlan::Build(model, shapes);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ((*plan)->fused_attentions(), 1);
    auto fused = testing::RunModelOnce(model, inputs);
    auto nodes =
        testing::RunModelOnce(model, inputs, {.fuse_attention = false});
    ASSERT_TRUE(fused.ok()) << fused.status();
    ASSERT_TRUE(nodes.ok()) << nodes.status();
    ASSERT_EQ((*fused)[0].data.size(), (*nodes)[0].data.size());
    for (size_t i = 0; i < (*nodes)[0].data.size(); ++i)
      ASSERT_NEAR((*fused)[0].data[i], (*nodes)[0].data[i], 1e-5) << i;
  }
}

// Perturbed: the [S, B, E] value before the Transpose is also a model
// output, so the rows keep the graph's [S, B] order and the Transpose
// copies.
TEST(AttentionPatternTest, MergedRowsReadElsewhereKeepTheirOrder) {
  std::shared_ptr<const NeutralPlan> plan;
  const std::vector<AttentionSite> sites = Sites(
      AttentionModel({.projected_merge = true, .merged_extra = true}), &plan);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_TRUE(sites[0].row_views.empty());
  EXPECT_EQ(sites[0].out.strides[0], kE);       // batch: [S * B] rows
  EXPECT_EQ(sites[0].out.strides[2], kB * kE);  // position
}

// A fourth reader of the gathered value (a model output) keeps the
// Gathers: the site reads their outputs as values of their own.
TEST(AttentionPatternTest, GatheredValueWithOtherReadersStays) {
  std::shared_ptr<const NeutralPlan> plan;
  const std::vector<AttentionSite> sites =
      Sites(AttentionModel({.gathered = true, .gather_extra = true}), &plan);
  ASSERT_EQ(sites.size(), 1u);
  for (int n : sites[0].nodes) EXPECT_NE(*plan->nodes[n].op_type, "Gather");
  EXPECT_NE(sites[0].q.value, plan->inputs[0]);
  EXPECT_NE(sites[0].q.value, sites[0].k.value);
  EXPECT_EQ(sites[0].k.offset, 0);
}

void ExpectNotFused(const Variant& v) {
  std::shared_ptr<const Model> model = AttentionModel(v);
  ASSERT_NE(model, nullptr);
  std::shared_ptr<const NeutralPlan> plan;
  EXPECT_TRUE(Sites(model, &plan).empty());
}

TEST(AttentionPatternTest, PerturbedGraphsDoNotFuse) {
  {
    SCOPED_TRACE("softmax over the query axis");
    ExpectNotFused({.softmax_axis = 2});
  }
  {
    SCOPED_TRACE("a factor after the mask scales the mask too");
    ExpectNotFused({.scale_after_mask = true});
  }
  {
    SCOPED_TRACE("the guard replaces NaN with 1, not 0");
    ExpectNotFused({.guard_value = 1.0f});
  }
  {
    SCOPED_TRACE("the probabilities are a model output");
    ExpectNotFused({.guard = false, .softmax_is_output = true});
  }
}

// A per-dimension factor on Q is no scale: the attention reads Q after that
// Mul, which stays a node of its own, and takes K's factor alone.
TEST(AttentionPatternTest, VectorFactorStaysOutside) {
  std::shared_ptr<const Model> model = AttentionModel({.vector_scale = true});
  ASSERT_NE(model, nullptr);
  std::shared_ptr<const NeutralPlan> plan;
  const std::vector<AttentionSite> sites = Sites(model, &plan);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_FLOAT_EQ(sites[0].scale, 0.75f);
  const int q_input = plan->inputs[0];
  EXPECT_NE(sites[0].q.value, q_input);
  EXPECT_EQ(sites[0].k.value, plan->inputs[1]);
}

// The corpus: every Softmax of these exports is an attention's, and each
// must be found, whatever the exporter (ViT's TorchScript export splits one
// packed QKV projection through 5-D transposes). Not listed, and not
// fused: Swin's shifted windows (one of four found; v2's cosine attention
// scales per head) and T5 (a relative position bias, softmax in float32
// behind Casts).
TEST(AttentionPatternTest, RealExportsFuseEverySoftmax) {
  const char* const kModels[] = {
      "bert_tiny__torchscript",
      "bert_tiny__dynamo",
      "distilbert_tiny__torchscript",
      "distilbert_tiny__dynamo",
      "roberta_tiny__torchscript",
      "roberta_tiny__dynamo",
      "albert_tiny__torchscript",
      "albert_tiny__dynamo",
      "gpt2_tiny__torchscript",
      "gpt2_tiny__dynamo",
      "clip_text_tiny__torchscript",
      "clip_text_tiny__dynamo",
      "vit_tiny__dynamo",
      "vit_tiny__torchscript",
      "clip_vision_tiny__dynamo",
      "clip_vision_tiny__torchscript",
      "whisper_encoder_tiny__dynamo",
      "whisper_encoder_tiny__torchscript",
  };
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    auto model = Model::LoadFromFile(
        std::string(COALESCE_CORPUS_DIR) + "/" + name + "/model.onnx", {});
    ASSERT_TRUE(model.ok()) << model.status();
    std::vector<Shape> shapes;
    for (const TensorSpec& spec : (*model)->signature().inputs) {
      Shape shape = spec.dims;
      for (int64_t& d : shape)
        if (d < 0) d = 3;
      shapes.push_back(shape);
    }
    auto plan = MakeNeutralPlanner(*model)(shapes);
    ASSERT_TRUE(plan.ok()) << plan.status();
    int softmaxes = 0;
    for (const PlanNode& n : (*plan)->nodes)
      softmaxes += !n.folded && *n.op_type == "Softmax";
    const std::vector<AttentionSite> sites = FindAttention(**plan);
    EXPECT_GT(softmaxes, 0);
    EXPECT_EQ(static_cast<int>(sites.size()), softmaxes);
    for (const AttentionSite& s : sites) {
      EXPECT_GT(s.heads, 0);
      EXPECT_GT(s.head_dim, 0);
      EXPECT_GT(s.nodes.size(), 4u);
    }
  }
}

}  // namespace
}  // namespace coalesce
