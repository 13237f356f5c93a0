// Token packing on the simulated device: corpus exports' packed forms run
// through the pipelined executor as a GPU instance would run them
// (DeviceProgramSourceFor: the packed program, its indices derived from
// the staged mask), against the same model padded on the same device, in
// FP32 and FP16, three batches in turn on one instance; and the derived
// inputs' shapes (every token bucket a batch can take).
#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/device/device_plan.h"
#include "engine/device/gpu_instance.h"
#include "engine/device/pipelined_executor.h"
#include "engine/device/simulated_device.h"
#include "engine/device/simulated_kernels.h"
#include "engine/device/token_packing_inputs.h"
#include "engine/model.h"
#include "engine/packing_indices.h"
#include "engine/testing/packed_batches.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coalesce {
namespace {

using ::testing::ElementsAre;

// A DeviceProgram that records the input shapes of every batch it
// enqueues (the derived ones included: a packed batch's [T']).
class RecordingProgram : public DeviceProgram {
 public:
  RecordingProgram(std::unique_ptr<DeviceProgram> inner,
                   std::vector<std::vector<Shape>>* enqueued)
      : inner_(std::move(inner)), enqueued_(enqueued) {}
  const ModelSignature& signature() const override {
    return inner_->signature();
  }
  absl::StatusOr<std::vector<Shape>> OutputShapes(
      const std::vector<Shape>& input_shapes) const override {
    return inner_->OutputShapes(input_shapes);
  }
  absl::Status Enqueue(DeviceStream& stream,
                       const std::vector<Shape>& input_shapes,
                       const std::vector<const void*>& inputs,
                       const std::vector<void*>& outputs) override {
    enqueued_->push_back(input_shapes);
    return inner_->Enqueue(stream, input_shapes, inputs, outputs);
  }
  bool ReadyFor(const std::vector<Shape>& input_shapes,
                const std::vector<const void*>& inputs,
                const std::vector<void*>& outputs,
                std::vector<Shape>* output_shapes) const override {
    return inner_->ReadyFor(input_shapes, inputs, outputs, output_shapes);
  }
  uint64_t ready_epoch() const override { return inner_->ready_epoch(); }
  int64_t StagedRows(int64_t rows) const override {
    return inner_->StagedRows(rows);
  }
  std::vector<int64_t> PreparedBatchSizes(
      int64_t max_batch_size) const override {
    return inner_->PreparedBatchSizes(max_batch_size);
  }

 private:
  const std::unique_ptr<DeviceProgram> inner_;
  std::vector<std::vector<Shape>>* const enqueued_;
};

// A two-slot instance of `model` on `device`, as a GPU instance runs it
// (with `packing`, its packed form); null (a failure recorded) when it
// cannot be made. With `enqueued`, the shapes of every batch its program
// enqueues are recorded there.
std::unique_ptr<PipelinedExecutor> SimulatedInstance(
    const std::shared_ptr<SimulatedDevice>& device,
    const std::shared_ptr<const Model>& model, bool packing,
    DeviceFloat activations,
    std::vector<std::vector<Shape>>* enqueued = nullptr) {
  GraphProgramSource source = DeviceProgramSourceFor(model, packing);
  EXPECT_EQ(source.derived != nullptr, packing);
  PipelinedExecutorOptions pipeline;
  pipeline.num_slots = 2;
  pipeline.derived = source.derived;
  auto program =
      CreateGraphProgram(device, CreateSimulatedKernels(device.get()),
                         std::move(source), {.activations = activations});
  EXPECT_TRUE(program.ok()) << program.status();
  if (!program.ok()) return nullptr;
  if (enqueued != nullptr) {
    *program =
        std::make_unique<RecordingProgram>(*std::move(program), enqueued);
  }
  auto exec = CreatePipelinedExecutor(device, *std::move(program), pipeline);
  EXPECT_TRUE(exec.ok()) << exec.status();
  return exec.ok() ? *std::move(exec) : nullptr;
}

// Batches of `batches` in turn through a two-slot instance of `model` on a
// simulated device (each on slot 0, after the last); with `packing`, of its
// packed form.
std::vector<std::vector<testing::FloatOutput>> RunOnSimulated(
    const std::shared_ptr<const Model>& model, bool packing,
    DeviceFloat activations,
    const std::vector<std::vector<HostTensor>>& batches) {
  auto device = std::make_shared<SimulatedDevice>();
  std::unique_ptr<PipelinedExecutor> exec =
      SimulatedInstance(device, model, packing, activations);
  if (exec == nullptr) return {};
  std::vector<std::vector<testing::FloatOutput>> results;
  for (const std::vector<HostTensor>& inputs : batches) {
    auto outputs =
        testing::RunBatch(*exec, inputs, model->signature().outputs.size());
    EXPECT_TRUE(outputs.ok()) << outputs.status();
    results.push_back(outputs.ok() ? *std::move(outputs)
                                   : std::vector<testing::FloatOutput>());
  }
  exec.reset();
  EXPECT_THAT(device->problems(), ::testing::IsEmpty());
  return results;
}

// Corpus exports with a packed form.
constexpr const char* kPackedExports[] = {
    "bert_tiny__dynamo",       "bert_tiny__torchscript",
    "distilbert_tiny__dynamo", "roberta_tiny__torchscript",
    "clip_text_tiny__dynamo",  "gpt2_tiny__torchscript",
    "gpt2_tiny__dynamo",
};

// Corpus export `dir` as a GPU instance in `activations` loads it, with
// its packed form; null (a failure recorded) when it does not load or has
// no packed form.
std::shared_ptr<const Model> LoadPackable(const std::string& dir,
                                          DeviceFloat activations) {
  ModelOptions options = ModelOptions::ForDevice(
      /*channels_last=*/activations != DeviceFloat::kFloat);
  options.token_packing = true;
  auto model = Model::LoadFromFile(dir + "/model.onnx", options);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return nullptr;
  EXPECT_NE((*model)->packed(), nullptr) << (*model)->packing_refusal();
  return (*model)->packed() != nullptr ? *model : nullptr;
}

std::string Named(const char* name, DeviceFloat activations) {
  return absl::StrCat(name,
                      activations == DeviceFloat::kHalf ? " fp16" : " fp32");
}

TEST(TokenPackingDeviceTest, PackedMatchesPaddedAtRealPositions) {
  for (const char* name : kPackedExports) {
    for (DeviceFloat activations : {DeviceFloat::kFloat, DeviceFloat::kHalf}) {
      SCOPED_TRACE(Named(name, activations));
      const std::string dir = absl::StrCat(COALESCE_CORPUS_DIR, "/", name);
      std::shared_ptr<const Model> model = LoadPackable(dir, activations);
      ASSERT_NE(model, nullptr);
      // Three batches on one instance: mixed lengths, other ones (another
      // token bucket, the same staging), and none padded.
      const std::vector<std::vector<int64_t>> lengths = {
          {16, 5, 11, 1}, {3, 16, 2, 9}, {16, 16, 16, 16}};
      std::vector<std::vector<HostTensor>> batches;
      int64_t seq = 0;
      for (const std::vector<int64_t>& l : lengths) {
        auto inputs = testing::MixedLengthInputs(dir, l, &seq);
        ASSERT_TRUE(inputs.ok()) << inputs.status();
        batches.push_back(*std::move(inputs));
      }
      const auto padded = RunOnSimulated(model, false, activations, batches);
      const auto packed = RunOnSimulated(model, true, activations, batches);
      ASSERT_EQ(padded.size(), 3u);
      ASSERT_EQ(packed.size(), 3u);
      // The same rows computed the same way in both: equal, not close. The
      // batch without padding ran its packed plan (T' = B * S) and has no
      // padded position to check.
      for (size_t b = 0; b < 2; ++b) {
        EXPECT_EQ(testing::CompareAtRealPositions(padded[b], packed[b],
                                                  lengths[b], seq, 1e-6f),
                  "")
            << "batch " << b;
      }
      ASSERT_EQ(padded[2].size(), packed[2].size());
      for (size_t o = 0; o < padded[2].size(); ++o)
        EXPECT_EQ(padded[2][o].values, packed[2][o].values);
    }
  }
}

// Holes: the packed rows' positions are not their indices among the
// sequence's rows, and the mask is read at them. (Not left padding: the
// pooler output reads position 0, which is then padded, and the padded
// model pools what it computed there, the packed one zeros. The
// simulated_attention_test.cc case has left padding.)
TEST(TokenPackingDeviceTest, HolesMatchThePaddedModel) {
  constexpr int64_t kBatch = 4, kSeq = 16;
  std::vector<uint8_t> real(kBatch * kSeq, 1);
  real[1] = real[2] = 0;                // row 0: two holes near the start
  real[kSeq + 3] = real[kSeq + 7] = 0;  // row 1: two holes apart
  for (int64_t s = 9; s < kSeq; ++s) real[2 * kSeq + s] = 0;  // row 2: right
  for (const char* name : {"bert_tiny__dynamo", "roberta_tiny__torchscript",
                           "clip_text_tiny__dynamo"}) {
    for (DeviceFloat activations : {DeviceFloat::kFloat, DeviceFloat::kHalf}) {
      SCOPED_TRACE(Named(name, activations));
      const std::string dir = absl::StrCat(COALESCE_CORPUS_DIR, "/", name);
      std::shared_ptr<const Model> model = LoadPackable(dir, activations);
      ASSERT_NE(model, nullptr);
      int64_t seq = 0;
      auto inputs = testing::MaskedInputs(dir, real, kBatch, &seq);
      ASSERT_TRUE(inputs.ok()) << inputs.status();
      ASSERT_EQ(seq, kSeq);
      const auto padded = RunOnSimulated(model, false, activations, {*inputs});
      const auto packed = RunOnSimulated(model, true, activations, {*inputs});
      ASSERT_EQ(padded.size(), 1u);
      ASSERT_EQ(packed.size(), 1u);
      EXPECT_EQ(testing::CompareAtRealPositions(padded[0], packed[0], real,
                                                kBatch, kSeq, 1e-6f),
                "");
    }
  }
}

// Every fused attention of the packed plans reads and writes the packed
// rows (plan_lowering.h, engine/packed_rows.h): none runs over padded rows
// between unpacking and packing Gathers, at the largest and the smallest
// token bucket, in FP32 and FP16.
TEST(TokenPackingDeviceTest, EveryAttentionReadsPackedRows) {
  for (const char* name : kPackedExports) {
    SCOPED_TRACE(name);
    std::shared_ptr<const Model> model = LoadPackable(
        absl::StrCat(COALESCE_CORPUS_DIR, "/", name), DeviceFloat::kFloat);
    ASSERT_NE(model, nullptr);
    GraphProgramSource source = DeviceProgramSourceFor(model, true);
    ASSERT_NE(source.derived, nullptr);
    std::vector<Shape> own;
    const size_t count =
        source.signature.inputs.size() - source.derived->count();
    for (size_t i = 0; i < count; ++i) {
      Shape shape = source.signature.inputs[i].dims;
      for (int64_t& d : shape)
        if (d < 0) d = 4;  // the batch; the corpus's sequence is 16
      own.push_back(shape);
    }
    const auto possible = source.derived->PossibleShapes(own, kEveryRowReal);
    ASSERT_GE(possible.size(), 2u);
    for (const auto& derived : {possible.front(), possible.back()}) {
      std::vector<Shape> shapes = own;
      shapes.insert(shapes.end(), derived.begin(), derived.end());
      auto plan = source.planner(shapes);
      ASSERT_TRUE(plan.ok()) << plan.status();
      for (DeviceFloat activations :
           {DeviceFloat::kFloat, DeviceFloat::kHalf}) {
        auto summary = DescribeDevicePlan(**plan, activations);
        ASSERT_TRUE(summary.ok()) << summary.status();
        int packed = 0, padded = 0;
        for (const DevicePlanNode& n : summary->nodes) {
          packed += n.op == "PackedAttention";
          padded += n.op == "Attention";
        }
        EXPECT_GE(packed, 2) << "T' " << derived[0][0];
        EXPECT_EQ(padded, 0) << "T' " << derived[0][0];
      }
    }
  }
}

// What the server's warm-up does (server/model_warmup.h), on slot 0: each
// prepared batch size, largest first, each of its variants (a mask with a
// token bucket's count of real tokens) twice, from zeros. Returns the
// batches run.
int WarmUp(PipelinedExecutor& exec, const Model& model, int64_t max_batch,
           int64_t seq) {
  std::vector<int64_t> sizes = exec.PreparedBatchSizes(max_batch);
  std::sort(sizes.rbegin(), sizes.rend());
  int ran = 0;
  for (int64_t rows : sizes) {
    std::vector<HostTensor> zeros;
    std::vector<Shape> shapes;
    for (const TensorSpec& spec : model.signature().inputs) {
      zeros.push_back(
          {spec.name,
           spec.dtype,
           {rows, seq},
           std::string(rows * seq * ElementByteSize(spec.dtype), '\0')});
      shapes.push_back({rows, seq});
    }
    for (int v = 0; v < exec.PreparedVariants(shapes); ++v) {
      std::vector<std::string> data;
      for (const HostTensor& t : zeros) data.push_back(t.bytes);
      EXPECT_TRUE(exec.WritePreparedVariant(shapes, v, &data).ok());
      std::vector<HostTensor> batch = zeros;
      for (size_t i = 0; i < batch.size(); ++i) batch[i].bytes = data[i];
      for (int run = 0; run < 2; ++run, ++ran) {
        auto outputs =
            testing::RunBatch(exec, batch, model.signature().outputs.size());
        EXPECT_TRUE(outputs.ok()) << outputs.status();
      }
    }
  }
  return ran;
}

// A packed instance pads each batch with zero rows to a graph batch size
// (GraphBatchSize): after the warm-up of the prepared sizes' token
// buckets, every slot is ready for every batch size, and mixed-length
// batches of every size (each on both slots, the largest first, so that
// a padded batch's staging held a larger one's tokens) run graphs
// captured at warm-up (none captured later), shared by the slots, in the
// bucket of their own tokens (the zero rows hold none), with the padded
// model's values at their real positions.
TEST(TokenPackingDeviceTest, ZeroRowsPadEveryBatchToAPreparedGraph) {
  constexpr int64_t kMaxBatch = 8, kSeq = 16;
  const std::string dir =
      absl::StrCat(COALESCE_CORPUS_DIR, "/bert_tiny__torchscript");
  std::shared_ptr<const Model> model = LoadPackable(dir, DeviceFloat::kFloat);
  ASSERT_NE(model, nullptr);
  auto device = std::make_shared<SimulatedDevice>();
  std::vector<std::vector<Shape>> enqueued;
  std::unique_ptr<PipelinedExecutor> exec =
      SimulatedInstance(device, model, true, DeviceFloat::kFloat, &enqueued);
  ASSERT_NE(exec, nullptr);
  EXPECT_THAT(exec->PreparedBatchSizes(kMaxBatch),
              ElementsAre(1, 2, 3, 4, 6, 8));
  const int ran = WarmUp(*exec, *model, kMaxBatch, kSeq);
  EXPECT_EQ(ran, 6 * 8 * 2);  // each size's 8 buckets, twice
  const int captured = device->graphs_captured();
  EXPECT_EQ(captured, 6 * 8);  // a graph per (size, bucket), not per slot
  const std::vector<Shape> largest = {
      {kMaxBatch, kSeq}, {kMaxBatch, kSeq}, {kMaxBatch, kSeq}};
  ASSERT_TRUE(exec->slot(1)->SetInputShapes(largest).ok());  // sized once
  for (int64_t rows = 1; rows <= kMaxBatch; ++rows) {
    for (int k = 0; k < 2; ++k) {
      EXPECT_TRUE(
          exec->slot(k)->ReadyFor({{rows, kSeq}, {rows, kSeq}, {rows, kSeq}}))
          << rows << " rows, slot " << k;
    }
  }
  std::vector<std::vector<int64_t>> lengths;
  std::vector<std::vector<HostTensor>> batches;
  for (int64_t rows = kMaxBatch; rows >= 1; --rows) {
    lengths.emplace_back();
    for (int64_t r = 0; r < rows; ++r)
      lengths.back().push_back(1 + (r * 7 + rows * 3) % kSeq);
    int64_t seq = 0;
    auto inputs = testing::MixedLengthInputs(dir, lengths.back(), &seq);
    ASSERT_TRUE(inputs.ok()) << inputs.status();
    batches.push_back(*std::move(inputs));
  }
  const auto padded =
      RunOnSimulated(model, false, DeviceFloat::kFloat, batches);
  ASSERT_EQ(padded.size(), batches.size());
  for (size_t b = 0; b < batches.size(); ++b) {
    const int64_t rows = static_cast<int64_t>(lengths[b].size());
    const int64_t staged = GraphBatchSize(rows);
    int64_t tokens = 0;
    for (int64_t length : lengths[b]) tokens += length;
    for (int k = 0; k < 2; ++k) {
      SCOPED_TRACE(absl::StrCat(rows, " rows, slot ", k));
      auto packed = testing::RunBatch(*exec, batches[b],
                                      model->signature().outputs.size(), k);
      ASSERT_TRUE(packed.ok()) << packed.status();
      for (const testing::FloatOutput& out : *packed)
        EXPECT_EQ(out.shape[0], rows);  // its own rows, not the staged ones
      EXPECT_EQ(testing::CompareAtRealPositions(padded[b], *packed, lengths[b],
                                                kSeq, 1e-6f),
                "");
      ASSERT_EQ(enqueued.back().size(), 6u);
      EXPECT_EQ(enqueued.back()[0], (Shape{staged, kSeq}));
      EXPECT_EQ(enqueued.back()[3], Shape{TokenBucket(tokens, staged, kSeq)});
    }
  }
  EXPECT_EQ(device->graphs_captured(), captured);
  exec.reset();
  EXPECT_THAT(device->problems(), ::testing::IsEmpty());
}

// Zero rows after `real_rows` hold no token: the buckets a batch may take
// are those of its real rows' tokens, in the padded batch's step.
TEST(TokenPackingDeviceTest, ZeroRowsLeaveTheBucketsOfTheRealRows) {
  const TokenPackingInputs derived(/*mask_input=*/1, DataType::kInt64,
                                   /*zero_rows=*/true);
  EXPECT_TRUE(derived.PadsWithZeroRows());
  EXPECT_EQ(derived.max_shape_sets(), kTokenBuckets);
  struct Case {
    int64_t staged, real, seq;
  };
  for (const Case& c : {Case{6, 5, 16}, Case{12, 9, 4}, Case{3, 1, 7},
                        Case{8, 8, 16}, Case{2, 0, 5}}) {
    SCOPED_TRACE(absl::StrCat(c.real, " of ", c.staged, " x ", c.seq));
    std::set<int64_t> buckets, offered;
    for (int64_t tokens = 0; tokens <= c.real * c.seq; ++tokens)
      buckets.insert(TokenBucket(tokens, c.staged, c.seq));
    const auto possible =
        derived.PossibleShapes({{1}, {c.staged, c.seq}}, c.real);
    for (const auto& shapes : possible) {
      offered.insert(shapes[0][0]);
      EXPECT_EQ(shapes[1], Shape{c.staged * c.seq});
    }
    EXPECT_EQ(buckets, offered);
    EXPECT_EQ(possible.front()[0][0], *offered.rbegin());  // largest first
  }
}

// The warm-up's masks: each written mask, its real rows followed by zero
// rows, gives its bucket, for every mask type a model may take.
TEST(TokenPackingDeviceTest, WrittenMasksTakeEachBucket) {
  constexpr int64_t kStaged = 6, kReal = 5, kSeq = 16;
  for (DataType dtype : {DataType::kInt64, DataType::kInt32, DataType::kBool,
                         DataType::kFp32, DataType::kFp16}) {
    SCOPED_TRACE(DataTypeName(dtype));
    const TokenPackingInputs derived(/*mask_input=*/0, dtype,
                                     /*zero_rows=*/true);
    const std::vector<Shape> shapes = {{kStaged, kSeq}};
    const auto possible = derived.PossibleShapes(shapes, kReal);
    // Steps of 12 rows up to 84, 80 real positions rounded up (96: never).
    ASSERT_EQ(possible.size(), 7u);
    const size_t width = ElementByteSize(dtype);
    for (int set = 0; set < static_cast<int>(possible.size()); ++set) {
      std::string mask(kStaged * kSeq * width, '\0');
      ASSERT_TRUE(
          derived.WriteInputsFor(shapes, kReal, set, {mask.data()}).ok());
      std::vector<int64_t> pack(kStaged * kSeq), unpack(kStaged * kSeq),
          spread(kStaged * kSeq);
      auto got = derived.Compute(shapes, kReal, {mask.data()},
                                 {pack.data(), unpack.data(), spread.data()});
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ((*got)[0], possible[set][0]) << "set " << set;
    }
    // A real token is a 1 of the mask's type, as a tokenizer writes it.
    std::string mask(kReal * kSeq * width, '\0');
    ASSERT_TRUE(derived.WriteInputsFor(shapes, kReal, 0, {mask.data()}).ok());
    if (dtype == DataType::kFp32) {
      float first;
      std::memcpy(&first, mask.data(), sizeof first);
      EXPECT_EQ(first, 1.0f);
    }
    if (dtype == DataType::kInt64) {
      int64_t first;
      std::memcpy(&first, mask.data(), sizeof first);
      EXPECT_EQ(first, 1);
    }
    EXPECT_EQ(derived.WriteInputsFor(shapes, kReal, 7, {mask.data()}).code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(TokenPackingDeviceTest, DerivedShapesAreTheTokenBuckets) {
  const TokenPackingInputs derived(/*mask_input=*/1, DataType::kInt64,
                                   /*zero_rows=*/true);
  EXPECT_EQ(derived.count(), 3);
  // 2 x 8 = 16 rows: buckets of 2, the largest first.
  const std::vector<std::vector<Shape>> possible =
      derived.PossibleShapes({{2, 8}, {2, 8}}, kEveryRowReal);
  ASSERT_EQ(possible.size(), 8u);
  EXPECT_THAT(possible[0], ElementsAre(Shape{16}, Shape{16}, Shape{16}));
  EXPECT_THAT(possible[7], ElementsAre(Shape{2}, Shape{16}, Shape{16}));
  // Every bucket a batch can take is among them, and nothing else.
  for (auto [batch, seq] :
       {std::pair<int64_t, int64_t>{3, 5}, {1, 1}, {4, 100}, {32, 128}}) {
    SCOPED_TRACE(absl::StrCat(batch, " x ", seq));
    std::set<int64_t> buckets, offered;
    for (int64_t tokens = 0; tokens <= batch * seq; ++tokens)
      buckets.insert(TokenBucket(tokens, batch, seq));
    for (const auto& shapes :
         derived.PossibleShapes({{1}, {batch, seq}}, kEveryRowReal))
      offered.insert(shapes[0][0]);
    EXPECT_EQ(buckets, offered);
    EXPECT_LE(offered.size(), static_cast<size_t>(kTokenBuckets));
  }
  const std::vector<int64_t> mask = {1, 1, 1, 0, 0, 0, 0, 0,
                                     1, 0, 0, 0, 0, 0, 0, 0};
  std::vector<int64_t> pack(16), unpack(16), spread(16);
  auto shapes =
      derived.Compute({{2, 8}, {2, 8}}, kEveryRowReal, {nullptr, mask.data()},
                      {pack.data(), unpack.data(), spread.data()});
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_THAT(*shapes, ElementsAre(Shape{4}, Shape{16}, Shape{16}));
  EXPECT_THAT(std::vector<int64_t>(pack.begin(), pack.begin() + 4),
              ElementsAre(0, 1, 2, 8));
  EXPECT_EQ(unpack[3], 4);  // the zero row
  EXPECT_EQ(spread[3], 0);
}

// A mask read from shared device memory is not on the host: every
// position of the real rows is taken as real, which is right and packs
// nothing but the zero rows a padded batch adds.
TEST(TokenPackingDeviceTest, MaskOffTheHostPacksEveryRow) {
  const TokenPackingInputs derived(/*mask_input=*/0, DataType::kInt64,
                                   /*zero_rows=*/true);
  std::vector<int64_t> pack(6), unpack(6), spread(6);
  auto shapes = derived.Compute({{2, 3}}, kEveryRowReal, {nullptr},
                                {pack.data(), unpack.data(), spread.data()});
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_THAT(*shapes, ElementsAre(Shape{6}, Shape{6}, Shape{6}));
  EXPECT_THAT(pack, ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_THAT(unpack, ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_THAT(spread, ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_EQ(
      derived
          .Compute({{6}}, kEveryRowReal, {nullptr}, {nullptr, nullptr, nullptr})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  // Padded to 3 rows: the third holds no token.
  std::vector<int64_t> pack3(9), unpack3(9), spread3(9);
  shapes = derived.Compute({{3, 3}}, /*real_rows=*/2, {nullptr},
                           {pack3.data(), unpack3.data(), spread3.data()});
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_EQ((*shapes)[0], Shape{TokenBucket(6, 3, 3)});
  EXPECT_THAT(std::vector<int64_t>(pack3.begin(), pack3.begin() + 6),
              ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_THAT(std::vector<int64_t>(unpack3.begin() + 6, unpack3.end()),
              ElementsAre(6, 6, 6));  // the zero row
}

}  // namespace
}  // namespace coalesce
