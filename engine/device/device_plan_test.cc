// The device's lowering decisions (device_plan.h) for real exports of the
// corpus (tests/models/real/): which nodes are fused, where the layout
// changes, and which precision each value has, in FP16 mode with the NHWC
// layout the server picks for it. Each "it is fused" check is paired with
// the same model loaded with that fusion switched off, where the check's
// premise must fail, so the checks can tell a fused plan from one that is
// not. Outputs against onnxruntime, in the same mode, are checked by
// tests/ort_compare/test_real_exports.py.
#include "engine/device/device_plan.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/device/testing/device_test_cases.h"
#include "engine/model.h"
#include "engine/neutral_planner.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

std::string CorpusModel(const std::string& name) {
  return std::string(COALESCE_CORPUS_DIR) + "/" + name + "/model.onnx";
}

// The plan of `name` for one 224-free input: every -1 dim of the inputs as
// 2 (the tiny corpus models take small images at any batch).
DevicePlanSummary PlanOf(const std::string& name, DeviceFloat activations,
                         ModelOptions options, bool fuse_attention = true) {
  auto model = Model::LoadFromFile(CorpusModel(name), options);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return {};
  std::vector<Shape> shapes;
  for (const TensorSpec& spec : (*model)->signature().inputs) {
    Shape shape = spec.dims;
    for (int64_t& d : shape)
      if (d < 0) d = 2;
    shapes.push_back(shape);
  }
  auto plan = MakeNeutralPlanner(*model)(shapes);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return {};
  auto summary = DescribeDevicePlan(**plan, activations, fuse_attention);
  EXPECT_TRUE(summary.ok()) << summary.status();
  return summary.ok() ? *summary : DevicePlanSummary{};
}

DevicePlanSummary Fp16Nhwc(const std::string& name,
                           OptimizerOptions optimizer = {}) {
  ModelOptions options = ModelOptions::ForDevice(/*channels_last=*/true);
  optimizer.channels_last = true;
  optimizer.patch_convolutions = true;  // as the server loads it
  options.optimizer = optimizer;
  return PlanOf(name, DeviceFloat::kHalf, options);
}

int Count(const DevicePlanSummary& s, const std::string& op) {
  return static_cast<int>(
      std::count_if(s.nodes.begin(), s.nodes.end(),
                    [&](const DevicePlanNode& n) { return n.op == op; }));
}

// Every convolution NHWC, writing float16, in one step; the first may take
// a second (converting the float32 model input).
void ExpectConvolutionsNhwcHalf(const DevicePlanSummary& s) {
  int first_steps = 0;
  for (const DevicePlanNode& n : s.nodes) {
    if (n.op != "FusedConv" && n.op != "Conv") continue;
    SCOPED_TRACE(n.name);
    EXPECT_EQ(n.op, "FusedConv");
    EXPECT_TRUE(n.channels_last);
    ASSERT_FALSE(n.outputs.empty());
    EXPECT_EQ(n.outputs[0], "fp16");
    if (first_steps == 0) {
      first_steps = n.steps;
      EXPECT_LE(n.steps, 2);
    } else {
      EXPECT_EQ(n.inputs[0], "fp16");
      EXPECT_EQ(n.steps, 1);
    }
  }
  EXPECT_GT(first_steps, 0) << "no convolution";
  if (::testing::Test::HasFailure()) ADD_FAILURE() << DevicePlanTable(s);
}

// Float32 only at the edges: the model input's NHWC copy (the first
// convolution converts it), and what the classifier's products write (they
// read float16 and write float32, as the model's output is).
void ExpectFloat32OnlyAtEdges(const DevicePlanSummary& s) {
  for (size_t i = 1; i < s.nodes.size(); ++i) {
    const DevicePlanNode& n = s.nodes[i];
    if (n.op == "Gemm" || n.op == "FusedGemm") continue;
    for (const std::string& out : n.outputs)
      EXPECT_NE(out, "fp32") << n.op << " " << n.name;
  }
}

// Layout changes only at the edges: into NHWC after the model input, back
// to NCHW before the classifier.
void ExpectTransposesOnlyAtEdges(const DevicePlanSummary& s) {
  EXPECT_EQ(Count(s, "Transpose"), 2);
  ASSERT_FALSE(s.nodes.empty());
  EXPECT_EQ(s.nodes.front().op, "Transpose");
}

TEST(DevicePlanTest, ResNetIsFusedNhwcHalfEndToEnd) {
  for (const char* name :
       {"resnet_bottleneck_tiny__torchscript", "resnet_bottleneck_tiny__dynamo",
        "resnet_basic_tiny__torchscript"}) {
    SCOPED_TRACE(name);
    const DevicePlanSummary s = Fp16Nhwc(name);
    ExpectConvolutionsNhwcHalf(s);
    ExpectTransposesOnlyAtEdges(s);
    // Bias, BatchNorm, Relu and the residual Add are in the convolutions.
    for (const char* op : {"Relu", "Add", "BatchNormalization", "Sum"})
      EXPECT_EQ(Count(s, op), 0) << op;
    ExpectFloat32OnlyAtEdges(s);
    EXPECT_EQ(s.float_values, 1);  // the input's NHWC copy
    EXPECT_GT(s.half_values, 10);
  }
}

TEST(DevicePlanTest, ResNetChecksFailWithoutTheFusions) {
  OptimizerOptions no_residual;
  no_residual.residual_fusion = false;
  EXPECT_GT(Count(Fp16Nhwc("resnet_bottleneck_tiny__torchscript", no_residual),
                  "Add"),
            0);
  OptimizerOptions no_activation;
  no_activation.activation_fusion = false;
  EXPECT_GT(
      Count(Fp16Nhwc("resnet_bottleneck_tiny__torchscript", no_activation),
            "Relu"),
      0);
}

TEST(DevicePlanTest, EfficientNetFusesSiluAndStaysNhwcHalf) {
  for (const char* name :
       {"efficientnet_b0_tiny__torchscript", "efficientnet_b0_tiny__dynamo"}) {
    SCOPED_TRACE(name);
    const DevicePlanSummary s = Fp16Nhwc(name);
    ExpectConvolutionsNhwcHalf(s);
    ExpectTransposesOnlyAtEdges(s);
    // SiLU is in the convolutions; what remains is squeeze-excitation's
    // global pool and its scale (a broadcast Mul), half as well.
    EXPECT_EQ(Count(s, "Sigmoid"), 0);
    EXPECT_EQ(Count(s, "Mul"), Count(s, "GlobalAveragePool") - 1);
    ExpectFloat32OnlyAtEdges(s);
  }
  OptimizerOptions no_activation;
  no_activation.activation_fusion = false;
  EXPECT_GT(Count(Fp16Nhwc("efficientnet_b0_tiny__torchscript", no_activation),
                  "Sigmoid"),
            0);
}

TEST(DevicePlanTest, MobileNetV3FusesHardSwishAndStaysNhwcHalf) {
  for (const char* name : {"mobilenet_v3_small_tiny__torchscript",
                           "mobilenet_v3_small_tiny__dynamo"}) {
    SCOPED_TRACE(name);
    const DevicePlanSummary s = Fp16Nhwc(name);
    ExpectConvolutionsNhwcHalf(s);
    ExpectTransposesOnlyAtEdges(s);
    EXPECT_EQ(Count(s, "HardSwish"), 0);
    EXPECT_EQ(Count(s, "HardSigmoid"), 0);
    EXPECT_EQ(Count(s, "Relu"), 0);
    ExpectFloat32OnlyAtEdges(s);
  }
}

TEST(DevicePlanTest, Fp32KeepsNchwAndFloat32) {
  const DevicePlanSummary s =
      PlanOf("resnet_bottleneck_tiny__torchscript", DeviceFloat::kFloat,
             ModelOptions::ForDevice());
  EXPECT_EQ(Count(s, "Transpose"), 0);
  EXPECT_EQ(s.half_values, 0);
  for (const DevicePlanNode& n : s.nodes) EXPECT_FALSE(n.channels_last);
}

// Transformers in FP16: the products write float16, LayerNorm and Softmax
// read and write it, so the values between the embeddings and the model
// output are float16 except what operators that read float32 only (the
// embedding Gather, the mask's Where and Cast) produce or read.
TEST(DevicePlanTest, TransformersStayHalfBetweenProducts) {
  for (const char* name :
       {"bert_tiny__torchscript", "bert_tiny__dynamo",
        "distilbert_tiny__dynamo", "roberta_tiny__torchscript",
        "gpt2_tiny__torchscript", "vit_tiny__dynamo"}) {
    SCOPED_TRACE(name);
    const DevicePlanSummary s =
        PlanOf(name, DeviceFloat::kHalf, ModelOptions::ForDevice());
    int products = 0, half_products = 0, norms = 0;
    for (const DevicePlanNode& n : s.nodes) {
      if (n.op == "LayerNormalization") {
        ++norms;
        EXPECT_EQ(n.inputs[0], "fp16") << n.name;
      }
      norms += n.op == "AddLayerNorm";  // its inputs: the Add's operands
      if (n.op == "MatMul" || n.op == "FusedMatMul" || n.op == "Gemm" ||
          n.op == "FusedGemm") {
        ++products;
        // A product reading a float32 operand converts it (a second step):
        // the attention probabilities behind the dynamo exporter's NaN
        // guard (IsNaN, Where) are float32.
        if (n.inputs[0] == "fp16" && n.outputs[0] == "fp16") ++half_products;
      }
    }
    EXPECT_GT(norms, 0);
    EXPECT_GE(4 * half_products, 3 * products)
        << half_products << "/" << products;
    EXPECT_GT(s.half_values, 3 * s.float_values);
    if (::testing::Test::HasFailure()) ADD_FAILURE() << DevicePlanTable(s);
  }
}

// The corpus exports with attentions, one per model family and exporter
// form.
constexpr const char* kAttentionExports[] = {
    "bert_tiny__torchscript",
    "bert_tiny__dynamo",
    "distilbert_tiny__dynamo",
    "roberta_tiny__torchscript",
    "gpt2_tiny__torchscript",
    "gpt2_tiny__dynamo",
    "vit_tiny__torchscript",
    "clip_text_tiny__dynamo",
    "whisper_encoder_tiny__torchscript"};

// Every attention of these exports runs as one fused attention in FP16,
// reading q, k and v as float16: no Softmax is left, and fewer Transposes
// (the head split and merge became strides). The same plans unfused have
// a Softmax per attention, so the checks tell the two apart.
TEST(DevicePlanTest, ExportedAttentionRunsFusedInHalf) {
  for (const char* name : kAttentionExports) {
    SCOPED_TRACE(name);
    const DevicePlanSummary fused =
        PlanOf(name, DeviceFloat::kHalf, ModelOptions::ForDevice());
    const DevicePlanSummary unfused =
        PlanOf(name, DeviceFloat::kHalf, ModelOptions::ForDevice(),
               /*fuse_attention=*/false);
    const int attentions = Count(fused, "Attention");
    EXPECT_GT(attentions, 0);
    EXPECT_EQ(attentions, Count(unfused, "Softmax"));
    EXPECT_EQ(Count(fused, "Softmax"), 0);
    EXPECT_EQ(Count(unfused, "Attention"), 0);
    EXPECT_LT(Count(fused, "Transpose"), Count(unfused, "Transpose"));
    // Q, K and V come from one packed product (the projection fusion, or
    // GPT-2's own Conv1D), read in place: no Split runs.
    EXPECT_EQ(Count(fused, "Split"), 0);
    for (const DevicePlanNode& n : fused.nodes) {
      if (n.op != "Attention") continue;
      EXPECT_EQ(n.inputs[0], "fp16") << n.name;
      EXPECT_EQ(n.inputs[1], "fp16") << n.name;
      EXPECT_EQ(n.inputs[2], "fp16") << n.name;
      EXPECT_EQ(n.steps, 1) << n.name;
    }
    if (::testing::Test::HasFailure()) ADD_FAILURE() << DevicePlanTable(fused);
  }
}

// Nodes of `op` that run at least one step (views and absorbed nodes run
// none).
int Copying(const DevicePlanSummary& s, const std::string& op) {
  return static_cast<int>(std::count_if(
      s.nodes.begin(), s.nodes.end(),
      [&](const DevicePlanNode& n) { return n.op == op && n.steps > 0; }));
}

// torchvision's ViT (nn.MultiheadAttention, both exporters): the packed
// in-projection's entries are the attention's views, and the transposes
// around the projections are views of rows the GEMMs compute in the other
// order (AttentionSite::row_views), so nothing is copied inside an
// attention; the patch embedding's three Transposes (into patches and back
// to NCHW, around its GEMM: graph_optimizer.h, pass 2b; then ViT's own
// flattening) and the class token's Gather are all that copy. Node by node
// the same exports copy three Gathers and at least three transposes per
// attention.
TEST(DevicePlanTest, MultiheadAttentionCopiesNothing) {
  for (const char* name : {"vit_tiny__torchscript", "vit_tiny__dynamo"}) {
    SCOPED_TRACE(name);
    const DevicePlanSummary fused =
        PlanOf(name, DeviceFloat::kHalf, ModelOptions::ForDevice());
    const DevicePlanSummary unfused =
        PlanOf(name, DeviceFloat::kHalf, ModelOptions::ForDevice(),
               /*fuse_attention=*/false);
    const int attentions = Count(fused, "Attention");
    EXPECT_GT(attentions, 0);
    EXPECT_EQ(Copying(fused, "Transpose"), 3);
    EXPECT_EQ(Copying(fused, "Gather"), 1);
    EXPECT_EQ(Count(fused, "Conv") + Count(fused, "FusedConv"), 0);
    EXPECT_GE(Copying(unfused, "Transpose"), 3 + 3 * attentions);
    EXPECT_EQ(Copying(unfused, "Gather"), 1 + 3 * attentions);
    if (::testing::Test::HasFailure()) ADD_FAILURE() << DevicePlanTable(fused);
  }
}

// The device case attention_multihead (nn.MultiheadAttention's form with
// its residual, which the device tests run against the CPU engine): both
// of its transposes are views and no Gather runs, so those runs check the
// row views' numbers; node by node they copy.
TEST(DevicePlanTest, MultiheadAttentionCaseRunsItsRowViews) {
  for (const testing::DeviceTestCase& c : testing::DeviceTestCases()) {
    if (c.name != "attention_multihead") continue;
    auto model =
        Model::LoadFromBytes(c.model.Serialize(), ModelOptions::ForDevice());
    ASSERT_TRUE(model.ok()) << model.status();
    auto plan = MakeNeutralPlanner(*model)(c.runs.front());
    ASSERT_TRUE(plan.ok()) << plan.status();
    for (const bool fused : {true, false}) {
      SCOPED_TRACE(fused);
      auto s = DescribeDevicePlan(**plan, DeviceFloat::kHalf, fused);
      ASSERT_TRUE(s.ok()) << s.status();
      EXPECT_EQ(Count(*s, "Attention"), fused ? 1 : 0);
      EXPECT_EQ(Copying(*s, "Transpose") == 0, fused);
      EXPECT_EQ(Copying(*s, "Gather") == 0, fused);
      if (::testing::Test::HasFailure()) ADD_FAILURE() << DevicePlanTable(*s);
    }
    return;
  }
  FAIL() << "no device case attention_multihead";
}

// BF16 mode plans every transformer export as FP16 mode does, node for
// node (the fused attention, the GEMM epilogues, the residuals in GEMMs and
// LayerNorms), with bfloat16 where FP16 has float16: the checks above hold
// for BF16 too.
TEST(DevicePlanTest, Bf16PlansAreFp16PlansInBfloat16) {
  for (const char* name : kAttentionExports) {
    SCOPED_TRACE(name);
    const DevicePlanSummary fp16 =
        PlanOf(name, DeviceFloat::kHalf, ModelOptions::ForDevice());
    const DevicePlanSummary bf16 =
        PlanOf(name, DeviceFloat::kBFloat16, ModelOptions::ForDevice());
    ASSERT_EQ(fp16.nodes.size(), bf16.nodes.size());
    EXPECT_GT(Count(bf16, "Attention"), 0);
    EXPECT_EQ(fp16.half_values, bf16.half_values);
    EXPECT_EQ(fp16.float_values, bf16.float_values);
    auto as_bf16 = [](std::vector<std::string> names) {
      for (std::string& n : names)
        if (n == "fp16") n = "bf16";
      return names;
    };
    for (size_t i = 0; i < fp16.nodes.size(); ++i) {
      const DevicePlanNode& a = fp16.nodes[i];
      const DevicePlanNode& b = bf16.nodes[i];
      EXPECT_EQ(a.op, b.op) << a.name;
      EXPECT_EQ(a.steps, b.steps) << a.name;
      EXPECT_EQ(as_bf16(a.inputs), b.inputs) << a.name;
      EXPECT_EQ(as_bf16(a.outputs), b.outputs) << a.name;
    }
    if (::testing::Test::HasFailure()) ADD_FAILURE() << DevicePlanTable(bf16);
  }
}

// The dense layers' residual adds of these exports are their GEMMs' C in
// FP16: FusedMatMul nodes with a float16 fourth input, one Add of two
// float16 values fewer for each (BERT's two per layer). With residual
// fusion off the Adds are there, so the checks tell them apart. (GPT-2's
// pre-LN residuals run in its LayerNorms instead: the next test.)
TEST(DevicePlanTest, DenseResidualsAddInTheGemm) {
  for (const char* name :
       {"bert_tiny__torchscript", "bert_tiny__dynamo",
        "distilbert_tiny__torchscript", "roberta_tiny__dynamo"}) {
    SCOPED_TRACE(name);
    auto half_adds = [](const DevicePlanSummary& s) {
      return static_cast<int>(std::count_if(
          s.nodes.begin(), s.nodes.end(), [](const DevicePlanNode& n) {
            return n.op == "Add" && n.inputs.size() == 2 &&
                   n.inputs[0] == "fp16" && n.inputs[1] == "fp16";
          }));
    };
    const DevicePlanSummary fused =
        PlanOf(name, DeviceFloat::kHalf, ModelOptions::ForDevice());
    ModelOptions no_residual = ModelOptions::ForDevice();
    no_residual.optimizer.residual_fusion = false;
    const DevicePlanSummary unfused =
        PlanOf(name, DeviceFloat::kHalf, no_residual);
    int with_z = 0;
    for (const DevicePlanNode& n : fused.nodes) {
      if (n.op == "FusedMatMul" && n.inputs.size() == 4 &&
          n.inputs[3] == "fp16" && n.steps == 1)
        ++with_z;
    }
    EXPECT_GT(with_z, 0);
    // Without residual fusion, each of those adds runs in the LayerNorm
    // after it instead (plan_lowering.h); no float16 Add runs in either.
    EXPECT_EQ(Count(unfused, "AddLayerNorm") - Count(fused, "AddLayerNorm"),
              with_z);
    EXPECT_EQ(half_adds(fused), 0);
    EXPECT_EQ(half_adds(unfused), 0);
    if (::testing::Test::HasFailure()) ADD_FAILURE() << DevicePlanTable(fused);
  }
}

// Residual adds run in the LayerNorm that reads them (plan_lowering.h):
// GPT-2's pre-LN blocks (every LayerNorm reads the residual stream, whose
// sum later blocks read again) and BERT's embedding sum + position
// embedding (its other residuals are in the GEMMs). An Add whose sum other
// nodes read again stays listed, with no steps (the LayerNorm writes its
// sum): GPT-2's four residual-stream sums.
TEST(DevicePlanTest, ResidualAddsRunInTheirLayerNorm) {
  for (const char* name : {"gpt2_tiny__torchscript", "gpt2_tiny__dynamo",
                           "bert_tiny__torchscript", "bert_tiny__dynamo"}) {
    SCOPED_TRACE(name);
    const bool gpt2 = std::string(name).rfind("gpt2", 0) == 0;
    const DevicePlanSummary plan =
        PlanOf(name, DeviceFloat::kHalf, ModelOptions::ForDevice());
    const int fused = Count(plan, "AddLayerNorm");
    const int idle_adds = static_cast<int>(std::count_if(
        plan.nodes.begin(), plan.nodes.end(),
        [](const DevicePlanNode& n) { return n.op == "Add" && n.steps == 0; }));
    if (gpt2) {
      EXPECT_EQ(fused, 5);  // 2 blocks x 2, and the final LayerNorm
      EXPECT_EQ(Count(plan, "LayerNormalization"), 0);
      EXPECT_EQ(idle_adds, 4);
    } else {
      EXPECT_EQ(fused, 1);  // the embeddings'
      EXPECT_EQ(idle_adds, 0);
    }
    if (::testing::Test::HasFailure()) ADD_FAILURE() << DevicePlanTable(plan);
  }
}

// BERT's FFN GELU (the exporters' erf pattern) runs in its GEMM: no Gelu
// node is left; with activation fusion off it is there. So does GPT-2's
// tanh GELU, across the Reshape that follows its Conv1D's Gemm.
TEST(DevicePlanTest, FfnGeluRunsInItsGemm) {
  for (const char* name : {"bert_tiny__torchscript", "bert_tiny__dynamo",
                           "distilbert_tiny__dynamo", "gpt2_tiny__torchscript",
                           "gpt2_tiny__dynamo"}) {
    SCOPED_TRACE(name);
    ModelOptions no_activation = ModelOptions::ForDevice();
    no_activation.optimizer.activation_fusion = false;
    EXPECT_GT(Count(PlanOf(name, DeviceFloat::kHalf, no_activation), "Gelu"),
              0);
    EXPECT_EQ(Count(PlanOf(name, DeviceFloat::kHalf, ModelOptions::ForDevice()),
                    "Gelu"),
              0);
  }
}

// The FP16 plan of device case `name` (device_test_cases.h) at its first
// run's shapes, as the server loads it for a device.
DevicePlanSummary CasePlan(const std::string& name) {
  for (const testing::DeviceTestCase& c : testing::DeviceTestCases()) {
    if (c.name != name) continue;
    auto model =
        Model::LoadFromBytes(c.model.Serialize(), ModelOptions::ForDevice());
    EXPECT_TRUE(model.ok()) << model.status();
    if (!model.ok()) return {};
    auto plan = MakeNeutralPlanner(*model)(c.runs.front());
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (!plan.ok()) return {};
    auto s = DescribeDevicePlan(**plan, DeviceFloat::kHalf, true);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : DevicePlanSummary{};
  }
  ADD_FAILURE() << "no device case " << name;
  return {};
}

// The device cases of the residual LayerNorm run it as one AddLayerNorm:
// a residual of the row's shape (one row, repeated over all), a position
// embedding over the positions, a full residual; so their runs against the
// CPU test the fused kernel's repetition over rows.
TEST(DevicePlanTest, ResidualLayerNormCasesRunFused) {
  for (const char* name :
       {"row_layer_norm", "embedding_layer_norm", "residual_layer_norm"}) {
    SCOPED_TRACE(name);
    const DevicePlanSummary s = CasePlan(name);
    EXPECT_EQ(Count(s, "AddLayerNorm"), 1);
    EXPECT_EQ(Count(s, "LayerNormalization"), 0);
    if (::testing::Test::HasFailure()) ADD_FAILURE() << DevicePlanTable(s);
  }
}

// CLIP's quick GELU runs in its GEMM (Silu with a scale): no Sigmoid is
// left in the CLIP exports or in the device case; with activation fusion
// off it is there.
TEST(DevicePlanTest, QuickGeluRunsInItsGemm) {
  for (const char* name :
       {"clip_text_tiny__dynamo", "clip_text_tiny__torchscript",
        "clip_vision_tiny__dynamo", "clip_vision_tiny__torchscript"}) {
    SCOPED_TRACE(name);
    ModelOptions no_activation = ModelOptions::ForDevice();
    no_activation.optimizer.activation_fusion = false;
    EXPECT_GT(Count(PlanOf(name, DeviceFloat::kHalf, no_activation), "Sigmoid"),
              0);
    EXPECT_EQ(Count(PlanOf(name, DeviceFloat::kHalf, ModelOptions::ForDevice()),
                    "Sigmoid"),
              0);
  }
  const DevicePlanSummary s = CasePlan("matmul_bias_quick_gelu");
  ASSERT_EQ(s.nodes.size(), 1u) << DevicePlanTable(s);
  EXPECT_EQ(s.nodes.front().op, "FusedMatMul");
}

}  // namespace
}  // namespace coalesce
