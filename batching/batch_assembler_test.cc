#include "batching/batch_assembler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "batching/fake_executor.h"
#include "batching/recording_sink.h"

namespace coalesce {
namespace {

using ::testing::ElementsAre;

// One UINT8 input "x" of row width 2 and one output "y"; byte values make
// rows easy to recognise.
class BatchAssemblerTest : public ::testing::Test {
 protected:
  QueuedRequest Request(int64_t rows, char first,
                        std::shared_ptr<SinkRecord>* record) {
    data_.push_back(std::string());
    for (int64_t i = 0; i < rows * 2; ++i) data_.back() += char(first + i);
    QueuedRequest q;
    q.request = std::make_unique<InferenceRequest>();
    q.request->inputs.push_back(
        {"x", DataType::kUint8, {rows, 2}, data_.back()});
    *record = std::make_shared<SinkRecord>();
    q.request->sink = std::make_unique<RecordingSink>(*record);
    q.layout.batch_size = rows;
    q.layout.input_order = {0};
    q.layout.output_order = {0};
    q.layout.item_shapes = {{2}};
    return q;
  }

  FakeExecutorInstance::Options ExecutorOptions() const {
    FakeExecutorInstance::Options options;
    options.inputs = specs_;
    return options;
  }

  std::deque<std::string> data_;
  std::vector<TensorSpec> specs_ = {{"x", DataType::kUint8, {2}}};
};

TEST_F(BatchAssemblerTest, GathersAtRowOffsetsAndScattersSlices) {
  BatchAssembler assembler(/*batched=*/true, {{"y", DataType::kUint8, {2}}});
  FakeExecutorInstance executor(ExecutorOptions());
  std::vector<QueuedRequest> batch;
  std::shared_ptr<SinkRecord> r1, r2, r3;
  batch.push_back(Request(2, 'a', &r1));
  batch.push_back(Request(1, 'A', &r2));
  batch.push_back(Request(3, '0', &r3));
  const std::vector<Shape> shapes = assembler.InputShapes(batch);
  EXPECT_THAT(shapes, ElementsAre(Shape{6, 2}));
  BatchSlot* slot = executor.slot(0);
  ASSERT_TRUE(slot->SetInputShapes(shapes).ok());
  ASSERT_TRUE(assembler.Gather(&batch, slot).ok());
  EXPECT_EQ(std::string(slot->input_data(0), 12), "abcdAB012345");

  executor.CopyIn(slot);
  executor.Run(slot);
  executor.CopyOut(slot);
  executor.CompleteNextBatch();  // Echo: y = x.
  ASSERT_TRUE(assembler.CheckOutputs(*slot, 6).ok());
  ASSERT_TRUE(assembler.Scatter(*slot, 6, 3, batch[2]).ok());
  ASSERT_TRUE(assembler.Scatter(*slot, 6, 2, batch[1]).ok());
  EXPECT_EQ(r3->outputs().at(0).data, "012345");
  EXPECT_EQ(r3->outputs().at(0).shape, (Shape{3, 2}));
  EXPECT_EQ(r2->outputs().at(0).data, "AB");
  EXPECT_EQ(r2->outputs().at(0).name, "y");
}

TEST_F(BatchAssemblerTest, OutputWithWrongBatchDimIsInternal) {
  BatchAssembler assembler(/*batched=*/true, {{"y", DataType::kUint8, {2}}});
  FakeExecutorInstance executor(ExecutorOptions());
  executor.SetOutputFunction(
      [](const FakeExecutorInstance::RecordedBatch&,
         std::vector<FakeExecutorInstance::FakeOutput>* out) {
        out->push_back({{5, 2}, std::string(10, 'x')});
        return absl::OkStatus();
      });
  std::vector<QueuedRequest> batch;
  std::shared_ptr<SinkRecord> r;
  batch.push_back(Request(2, 'a', &r));
  BatchSlot* slot = executor.slot(0);
  ASSERT_TRUE(slot->SetInputShapes(assembler.InputShapes(batch)).ok());
  ASSERT_TRUE(assembler.Gather(&batch, slot).ok());
  executor.CopyIn(slot);
  executor.CopyOut(slot);
  executor.CompleteNextBatch();
  const absl::Status status = assembler.CheckOutputs(*slot, 2);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("'y'"));
}

TEST_F(BatchAssemblerTest, UnbatchedModelPassesShapesThrough) {
  BatchAssembler assembler(/*batched=*/false, {{"y", DataType::kUint8, {2}}});
  std::vector<QueuedRequest> batch;
  std::shared_ptr<SinkRecord> r;
  batch.push_back(Request(3, 'a', &r));
  batch[0].layout.item_shapes = {{3, 2}};
  EXPECT_THAT(assembler.InputShapes(batch), ElementsAre(Shape{3, 2}));
}

// "ab" -> 4-byte little-endian length 2, then "ab".
std::string Serialized(const std::vector<std::string>& elements) {
  std::string out;
  for (const std::string& e : elements) {
    const uint32_t n = static_cast<uint32_t>(e.size());
    out += std::string{char(n & 0xff), char(n >> 8 & 0xff),
                       char(n >> 16 & 0xff), char(n >> 24)};
    out += e;
  }
  return out;
}

TEST(BatchAssemblerBytesTest,
     GathersSerializedRowsAndScattersEachRequestsRows) {
  const std::vector<TensorSpec> specs = {{"s", DataType::kBytes, {2}}};
  BatchAssembler assembler(/*batched=*/true, {{"t", DataType::kBytes, {2}}});
  FakeExecutorInstance::Options options;
  options.inputs = specs;
  FakeExecutorInstance executor(options);
  const std::string one = Serialized({"a", ""});
  const std::string two = Serialized({"bcd", "e", "fg", "hijk"});
  std::vector<QueuedRequest> batch;
  std::shared_ptr<SinkRecord> r1, r2;
  for (auto [data, rows, record] :
       {std::tuple{&one, 1, &r1}, std::tuple{&two, 2, &r2}}) {
    QueuedRequest q;
    q.request = std::make_unique<InferenceRequest>();
    q.request->inputs.push_back({"s", DataType::kBytes, {rows, 2}, *data});
    *record = std::make_shared<SinkRecord>();
    q.request->sink = std::make_unique<RecordingSink>(*record);
    q.layout = {rows, {0}, {0}, {{2}}};
    batch.push_back(std::move(q));
  }
  BatchSlot* slot = executor.slot(0);
  ASSERT_TRUE(
      assembler.SizeInputs(batch, assembler.InputShapes(batch), slot).ok());
  EXPECT_EQ(slot->input_byte_size(0), one.size() + two.size());
  ASSERT_TRUE(assembler.Gather(&batch, slot).ok());
  EXPECT_EQ(std::string(slot->input_data(0), slot->input_byte_size(0)),
            Serialized({"a", "", "bcd", "e", "fg", "hijk"}));
  executor.CopyIn(slot);
  executor.Run(slot);
  executor.CopyOut(slot);
  executor.CompleteNextBatch();  // Echo.
  ASSERT_TRUE(assembler.CheckOutputs(*slot, 3).ok());
  ASSERT_TRUE(assembler.Scatter(*slot, 3, 1, batch[1]).ok());
  ASSERT_TRUE(assembler.Scatter(*slot, 3, 0, batch[0]).ok());
  EXPECT_EQ(r1->outputs().at(0).data, one);
  EXPECT_EQ(r1->outputs().at(0).dtype, DataType::kBytes);
  EXPECT_EQ(r2->outputs().at(0).data, two);
  EXPECT_EQ(r2->outputs().at(0).shape, (Shape{2, 2}));
  // Two rows claimed, elements for one and a half: refused before Scatter.
  EXPECT_EQ(assembler.CheckOutputs(*slot, 4).code(),
            absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace coalesce
