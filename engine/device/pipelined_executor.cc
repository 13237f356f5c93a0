#include "engine/device/pipelined_executor.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "engine/data_type.h"
#include "engine/device/status_context.h"
#include "engine/device/stream_waiter.h"

namespace coalesce {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::nanoseconds Span(Clock::time_point from, Clock::time_point to) {
  return std::max(std::chrono::nanoseconds(0), to - from);
}

// One tensor's pinned host staging buffer and its device buffer.
struct StagedTensor {
  std::unique_ptr<DeviceBuffer> host;
  std::unique_ptr<DeviceBuffer> device;
  size_t bytes = 0;  // of the current batch: what the batcher writes or reads
  // Copied to or from the device: `bytes`, and the rows of zeros a padded
  // batch has after them (input), or computes after them (output).
  size_t staged_bytes = 0;

  // Grows both buffers to hold `needed` bytes (to the next power of two);
  // bytes and staged_bytes become `needed`.
  absl::Status Reserve(Device& device_api, size_t needed) {
    bytes = staged_bytes = needed;
    if (host != nullptr && host->size() >= needed) return absl::OkStatus();
    const size_t capacity = std::bit_ceil(std::max<size_t>(needed, 256));
    host.reset();
    device.reset();
    auto new_device = device_api.AllocateDevice(capacity);
    if (!new_device.ok()) return new_device.status();
    auto new_host = device_api.AllocatePinnedHost(capacity);
    if (!new_host.ok()) return new_host.status();
    device = *std::move(new_device);
    host = *std::move(new_host);
    return absl::OkStatus();
  }
};

// Bytes [offset, offset + bytes) of a batch tensor that are copied to or
// from shared device memory at `device` instead of host staging.
struct DevicePiece {
  size_t offset = 0;
  size_t bytes = 0;
  char* device = nullptr;
};

// The [begin, end) ranges of [0, total) that no piece covers, in order.
std::vector<std::pair<size_t, size_t>> Uncovered(
    std::vector<DevicePiece> pieces, size_t total) {
  std::sort(pieces.begin(), pieces.end(),
            [](const DevicePiece& a, const DevicePiece& b) {
              return a.offset < b.offset;
            });
  std::vector<std::pair<size_t, size_t>> ranges;
  size_t at = 0;
  for (const DevicePiece& piece : pieces) {
    if (piece.offset > at) ranges.emplace_back(at, piece.offset);
    at = std::max(at, piece.offset + piece.bytes);
  }
  if (at < total) ranges.emplace_back(at, total);
  return ranges;
}

// The shapes `shapes` (a batch's own inputs) are staged as: dim 0 the
// program's StagedRows when every input has the same dim 0 (*real_rows
// that dim), else as they are (*real_rows kEveryRowReal). Only a program
// with derived inputs that PadsWithZeroRows pads (StagedRows).
std::vector<Shape> StagedShapes(const DeviceProgram& program,
                                const std::vector<Shape>& shapes,
                                int64_t* real_rows) {
  *real_rows = kEveryRowReal;
  if (shapes.empty() || shapes[0].empty()) return shapes;
  const int64_t rows = shapes[0][0];
  for (const Shape& shape : shapes) {
    if (shape.empty() || shape[0] != rows) return shapes;
  }
  const int64_t staged = program.StagedRows(rows);
  if (staged <= rows) return shapes;
  std::vector<Shape> padded = shapes;
  for (Shape& shape : padded) shape[0] = staged;
  *real_rows = rows;
  return padded;
}

class PipelineSlot : public BatchSlot {
 public:
  // `enqueue_mu` serializes the program's Enqueue (held by the executor's
  // steps).
  PipelineSlot(Device* device, int ordinal, DeviceProgram* program,
               const DerivedInputs* derived,
               std::function<absl::Status()> health, absl::Mutex* enqueue_mu)
      : device_(device),
        ordinal_(ordinal),
        program_(program),
        derived_(derived),
        health_(std::move(health)),
        enqueue_mu_(enqueue_mu) {}

  absl::Status Init() {
    for (auto* event : {&copied_in, &computed, &copied_out}) {
      auto created = device_->CreateEvent();
      if (!created.ok()) return created.status();
      *event = *std::move(created);
    }
    inputs_.resize(program_->signature().inputs.size());
    outputs_.resize(program_->signature().outputs.size());
    const int derived = derived_ == nullptr ? 0 : derived_->count();
    if (derived > static_cast<int>(inputs_.size())) {
      return absl::InvalidArgumentError(absl::StrCat("the program has ",
                                                     inputs_.size(),
                                                     " inputs, fewer "
                                                     "than its ",
                                                     derived, " derived ones"));
    }
    own_inputs_ = inputs_.size() - derived;
    input_pieces_.resize(inputs_.size());
    output_pieces_.resize(outputs_.size());
    return absl::OkStatus();
  }

  absl::Status SetInputShapes(const std::vector<Shape>& shapes) override {
    // First: a failed call leaves no registration of the last batch.
    for (auto& pieces : input_pieces_) pieces.clear();
    for (auto& pieces : output_pieces_) pieces.clear();
    if (absl::Status health = health_(); !health.ok()) return health;
    if (shapes.size() != own_inputs_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected ", own_inputs_, " inputs, got ", shapes.size()));
    }
    if (absl::Status s = StageShapes(shapes); !s.ok()) return s;
    for (size_t i = 0; i < own_inputs_; ++i)
      inputs_[i].bytes = RealBytes(inputs_[i].staged_bytes, input_shapes_[i]);
    for (size_t i = 0; i < outputs_.size(); ++i) {
      outputs_[i].bytes =
          RealBytes(outputs_[i].staged_bytes, staged_output_shapes_[i]);
      output_shapes_[i] = staged_output_shapes_[i];
      if (real_rows_ != kEveryRowReal) output_shapes_[i][0] = real_rows_;
    }
    return absl::OkStatus();
  }

  // Ready when the staging buffers hold the batch and the program is
  // ReadyFor it in them (asked under the enqueue lock: it reads what
  // Enqueue changes). True answers are remembered until the staging
  // buffers move or the program's ready_epoch changes, so a steady stream
  // of known shapes takes no lock here.
  bool ReadyFor(const std::vector<Shape>& shapes) const override {
    const uint64_t epoch = program_->ready_epoch();
    if (epoch != ready_epoch_ || ready_shapes_.size() > kMaxReadyShapes) {
      ready_shapes_.clear();
      ready_epoch_ = epoch;
    }
    if (ready_shapes_.contains(shapes)) return true;
    if (!CheckReady(shapes)) return false;
    ready_shapes_.insert(shapes);
    return true;
  }

  // ReadyFor without the memory: for each possible set of derived shapes,
  // the batch staged as SetInputShapes would.
  bool CheckReady(const std::vector<Shape>& shapes) const {
    if (shapes.size() != own_inputs_) return true;  // fails at once
    if (derived_ == nullptr) return CheckProgramReady(shapes);
    int64_t real_rows = 0;
    const std::vector<Shape> own = StagedShapes(*program_, shapes, &real_rows);
    for (const std::vector<Shape>& derived :
         derived_->PossibleShapes(own, real_rows)) {
      std::vector<Shape> full = own;
      full.insert(full.end(), derived.begin(), derived.end());
      if (!CheckProgramReady(full)) return false;
    }
    return true;
  }

  // Whether the staging buffers hold a batch of the program's `shapes` and
  // the program is ReadyFor it in them.
  bool CheckProgramReady(const std::vector<Shape>& shapes) const {
    const ModelSignature& sig = program_->signature();
    std::vector<const void*> in;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!Holds(inputs_[i], sig.inputs[i], shapes[i])) return false;
      in.push_back(inputs_[i].device->data());
    }
    std::vector<void*> out;
    for (const StagedTensor& t : outputs_) {
      if (t.device == nullptr) return false;
      out.push_back(t.device->data());
    }
    std::vector<Shape> output_shapes;
    bool ready = false;
    {
      absl::MutexLock lock(enqueue_mu_);
      ready = program_->ReadyFor(shapes, in, out, &output_shapes);
    }
    if (!ready) return false;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      if (!Holds(outputs_[i], sig.outputs[i], output_shapes[i])) return false;
    }
    return true;
  }

  char* input_data(int index) override {
    return static_cast<char*>(inputs_[index].host->data());
  }
  size_t input_byte_size(int index) const override {
    return inputs_[index].bytes;
  }
  const Shape& output_shape(int index) const override {
    return output_shapes_[index];
  }
  const char* output_data(int index) const override {
    return static_cast<const char*>(outputs_[index].host->data());
  }
  size_t output_byte_size(int index) const override {
    return outputs_[index].bytes;
  }
  StepTimings timings() const override {
    StepTimings t;
    t.copy_in = Span(copy_in_called, copy_in_done_at);
    t.run = Span(std::max(run_called, copy_in_done_at), run_done_at);
    t.copy_out = Span(std::max(copy_out_called, run_done_at), copy_out_done_at);
    return t;
  }

  bool Addresses(const SharedDeviceMemory& memory) const override {
    return ordinal_ >= 0 && memory.ordinal() == ordinal_;
  }

  absl::Status SetInputFromDevice(int index, size_t offset,
                                  const DeviceMemoryRef& ref) override {
    if (!ref || !Addresses(*ref.memory)) {
      return absl::UnimplementedError(
          absl::StrCat("shared device memory is not on ", device_->name()));
    }
    if (index < 0 || index >= static_cast<int>(own_inputs_) ||
        offset > inputs_[index].bytes ||
        ref.size > inputs_[index].bytes - offset) {
      return absl::InvalidArgumentError(
          absl::StrCat("bytes [", offset, ", ", offset + ref.size,
                       ") are outside input ", index, " of this batch"));
    }
    input_pieces_[index].push_back({offset, ref.size, ref.device_data()});
    return absl::OkStatus();
  }

  absl::Status SetOutputToDevice(int index, int64_t first_row, int64_t rows,
                                 int64_t batch_rows,
                                 const DeviceMemoryRef& ref) override {
    if (!ref || !Addresses(*ref.memory)) {
      return absl::UnimplementedError(
          absl::StrCat("shared device memory is not on ", device_->name()));
    }
    if (index < 0 || index >= static_cast<int>(outputs_.size()) ||
        batch_rows <= 0 || first_row < 0 || rows < 0 ||
        first_row + rows > batch_rows ||
        outputs_[index].bytes % static_cast<size_t>(batch_rows) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("output ", index, " has no rows [", first_row, ", ",
                       first_row + rows, ") of ", batch_rows));
    }
    const size_t row_bytes =
        outputs_[index].bytes / static_cast<size_t>(batch_rows);
    const size_t bytes = row_bytes * static_cast<size_t>(rows);
    if (bytes > ref.size) {
      return absl::InvalidArgumentError(absl::StrCat(
          bytes, " bytes do not fit a span of ", ref.size, " bytes"));
    }
    output_pieces_[index].push_back(
        {row_bytes * static_cast<size_t>(first_row), bytes, ref.device_data()});
    return absl::OkStatus();
  }

  // Fills the derived inputs' staging buffers from the batch's host
  // inputs (null for one with bytes in shared device memory) and sets
  // their shapes and byte counts; zeros the rows a padded batch adds
  // first. OK without derived inputs.
  absl::Status ComputeDerived() {
    if (derived_ == nullptr) return absl::OkStatus();
    for (size_t i = 0; i < own_inputs_; ++i) {
      StagedTensor& t = inputs_[i];
      std::memset(static_cast<char*>(t.host->data()) + t.bytes, 0,
                  t.staged_bytes - t.bytes);
    }
    const std::vector<Shape> own(input_shapes_.begin(),
                                 input_shapes_.begin() + own_inputs_);
    std::vector<const void*> in;
    for (size_t i = 0; i < own_inputs_; ++i) {
      in.push_back(input_pieces_[i].empty() ? inputs_[i].host->data()
                                            : nullptr);
    }
    std::vector<void*> out;
    for (size_t i = own_inputs_; i < inputs_.size(); ++i)
      out.push_back(inputs_[i].host->data());
    auto shapes = derived_->Compute(own, real_rows_, in, out);
    if (!shapes.ok()) return shapes.status();
    const ModelSignature& sig = program_->signature();
    for (size_t j = 0; j < shapes->size(); ++j) {
      const size_t i = own_inputs_ + j;
      const size_t bytes =
          static_cast<size_t>(ElementCount((*shapes)[j]).value_or(0)) *
          ElementByteSize(sig.inputs[i].dtype);
      if (bytes > inputs_[i].host->size()) {
        return absl::InternalError(
            absl::StrCat("derived input '", sig.inputs[i].name,
                         "' outgrew its staging buffer"));
      }
      input_shapes_[i] = (*shapes)[j];
      inputs_[i].bytes = inputs_[i].staged_bytes = bytes;
    }
    return absl::OkStatus();
  }

  std::vector<StagedTensor>& inputs() { return inputs_; }
  std::vector<StagedTensor>& outputs() { return outputs_; }
  const std::vector<Shape>& input_shapes() const { return input_shapes_; }
  const std::vector<DevicePiece>& input_pieces(size_t i) const {
    return input_pieces_[i];
  }
  const std::vector<DevicePiece>& output_pieces(size_t i) const {
    return output_pieces_[i];
  }

  // The current batch: device events, host Events, the first enqueue error.
  std::unique_ptr<DeviceEvent> copied_in, computed, copied_out;
  std::shared_ptr<Event> copy_in_done, run_done;
  absl::Status batch_status;
  Clock::time_point copy_in_called, copy_in_done_at, run_called, run_done_at,
      copy_out_called, copy_out_done_at;

 private:
  // The program's input shapes for a batch of `shapes` (padded with zero
  // rows when the executor pads; the derived inputs at their largest:
  // Compute sets theirs at CopyIn, and the outputs do not depend on them)
  // and its output shapes, into input_shapes_, staged_output_shapes_ and
  // real_rows_; buffers staged for them.
  absl::Status StageShapes(const std::vector<Shape>& shapes) {
    real_rows_ = kEveryRowReal;
    std::vector<Shape> full =
        derived_ == nullptr ? shapes
                            : StagedShapes(*program_, shapes, &real_rows_);
    if (derived_ != nullptr) {
      const std::vector<Shape> largest =
          derived_->PossibleShapes(full, real_rows_)[0];
      full.insert(full.end(), largest.begin(), largest.end());
    }
    auto output_shapes = program_->OutputShapes(full);
    if (!output_shapes.ok()) return output_shapes.status();
    input_shapes_ = std::move(full);
    staged_output_shapes_ = *std::move(output_shapes);
    output_shapes_.resize(staged_output_shapes_.size());
    const ModelSignature& sig = program_->signature();
    // Padded, each output's first rows are the batch's (the model's rows
    // are independent: every output has them as dim 0).
    for (size_t i = 0; i < outputs_.size() && real_rows_ != kEveryRowReal;
         ++i) {
      const Shape& shape = staged_output_shapes_[i];
      if (shape.empty() || shape[0] != input_shapes_[0][0]) {
        return absl::InternalError(absl::StrCat(
            "output '", sig.outputs[i].name, "' ", ShapeToString(shape),
            " of a batch padded to ", input_shapes_[0][0], " rows"));
      }
    }
    for (size_t i = 0; i < inputs_.size(); ++i) {
      absl::Status s = Stage(inputs_[i], sig.inputs[i], input_shapes_[i]);
      if (!s.ok()) return WithContext(s, "input '" + sig.inputs[i].name + "'");
    }
    for (size_t i = 0; i < outputs_.size(); ++i) {
      absl::Status s =
          Stage(outputs_[i], sig.outputs[i], staged_output_shapes_[i]);
      if (!s.ok())
        return WithContext(s, "output '" + sig.outputs[i].name + "'");
    }
    return absl::OkStatus();
  }

  // The bytes of the batch's own rows of `staged_bytes` staged as `shape`
  // (dim 0 the staged rows): all of them when the batch is not padded.
  size_t RealBytes(size_t staged_bytes, const Shape& shape) const {
    if (real_rows_ == kEveryRowReal || shape[0] == 0) return staged_bytes;
    return staged_bytes / static_cast<size_t>(shape[0]) *
           static_cast<size_t>(real_rows_);
  }

  absl::Status Stage(StagedTensor& tensor, const TensorSpec& spec,
                     const Shape& shape) {
    const std::optional<int64_t> count = ElementCount(shape);
    if (!count.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid shape ", ShapeToString(shape)));
    }
    const DeviceBuffer* before = tensor.device.get();
    absl::Status s = tensor.Reserve(
        *device_, static_cast<size_t>(*count) * ElementByteSize(spec.dtype));
    if (tensor.device.get() != before) ready_shapes_.clear();  // it moved
    return s;
  }

  // Whether `tensor`'s buffers hold `shape` without growing.
  static bool Holds(const StagedTensor& tensor, const TensorSpec& spec,
                    const Shape& shape) {
    const std::optional<int64_t> count = ElementCount(shape);
    return tensor.host != nullptr && count.has_value() &&
           tensor.host->size() >=
               static_cast<size_t>(*count) * ElementByteSize(spec.dtype);
  }

  Device* const device_;
  const int ordinal_;
  DeviceProgram* const program_;
  const DerivedInputs* const derived_;  // may be null
  size_t own_inputs_ = 0;  // the program's inputs before the derived ones
  const std::function<absl::Status()> health_;
  absl::Mutex* const enqueue_mu_;
  // ReadyFor's memory: shapes it said true for, at program epoch
  // ready_epoch_. Touched by the slot's owner only, as the rest.
  static constexpr size_t kMaxReadyShapes = 64;
  mutable std::set<std::vector<Shape>> ready_shapes_;
  mutable uint64_t ready_epoch_ = 0;
  std::vector<StagedTensor> inputs_, outputs_;
  // The program's shapes; the batch's outputs (its own rows).
  std::vector<Shape> input_shapes_, staged_output_shapes_, output_shapes_;
  // The batch's rows when it is padded with zero rows; else kEveryRowReal.
  int64_t real_rows_ = kEveryRowReal;
  // Per tensor, the batch's bytes in shared device memory.
  std::vector<std::vector<DevicePiece>> input_pieces_, output_pieces_;
};

class PipelinedExecutorImpl : public PipelinedExecutor {
 public:
  PipelinedExecutorImpl(std::shared_ptr<Device> device,
                        std::unique_ptr<DeviceProgram> program, int ordinal,
                        std::shared_ptr<const DerivedInputs> derived)
      : device_(std::move(device)),
        program_(std::move(program)),
        ordinal_(ordinal),
        derived_(std::move(derived)) {}

  ~PipelinedExecutorImpl() override {
    // Waiters first: every enqueued step completes; then the streams drain.
    copy_out_waiter_.reset();
    compute_waiter_.reset();
    copy_in_waiter_.reset();
    copy_out_stream_.reset();
    compute_stream_.reset();
    copy_in_stream_.reset();
  }

  absl::Status Init(int num_slots) {
    for (auto* stream :
         {&copy_in_stream_, &compute_stream_, &copy_out_stream_}) {
      auto created = device_->CreateStream();
      if (!created.ok()) return created.status();
      *stream = *std::move(created);
    }
    for (int i = 0; i < num_slots; ++i) {
      auto slot = std::make_unique<PipelineSlot>(
          device_.get(), ordinal_, program_.get(), derived_.get(),
          [this] { return health(); }, &enqueue_mu_);
      if (absl::Status s = slot->Init(); !s.ok()) return s;
      slots_.push_back(std::move(slot));
    }
    auto on_sticky = [this](const absl::Status& s) { MarkUnhealthy(s); };
    copy_in_waiter_ = std::make_unique<StreamWaiter>(device_.get(), on_sticky);
    compute_waiter_ = std::make_unique<StreamWaiter>(device_.get(), on_sticky);
    copy_out_waiter_ = std::make_unique<StreamWaiter>(device_.get(), on_sticky);
    return absl::OkStatus();
  }

  int num_slots() const override { return static_cast<int>(slots_.size()); }
  BatchSlot* slot(int index) override { return slots_[index].get(); }
  std::vector<int64_t> PreparedBatchSizes(
      int64_t max_batch_size) const override {
    return program_->PreparedBatchSizes(max_batch_size);
  }

  // One per set of derived shapes a batch of `shapes` may take (a
  // token-packed model's token buckets), staged as the slots stage it.
  int PreparedVariants(const std::vector<Shape>& shapes) const override {
    if (derived_ == nullptr) return 1;
    int64_t real_rows = 0;
    const std::vector<Shape> own = StagedShapes(*program_, shapes, &real_rows);
    return static_cast<int>(derived_->PossibleShapes(own, real_rows).size());
  }

  absl::Status WritePreparedVariant(
      const std::vector<Shape>& shapes, int variant,
      std::vector<std::string>* data) const override {
    if (derived_ == nullptr) return absl::OkStatus();
    if (data->size() != shapes.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("a warm-up batch of ", data->size(), " inputs for ",
                       shapes.size(), " shapes"));
    }
    int64_t real_rows = 0;
    const std::vector<Shape> own = StagedShapes(*program_, shapes, &real_rows);
    std::vector<void*> inputs;
    for (std::string& bytes : *data) inputs.push_back(bytes.data());
    return derived_->WriteInputsFor(own, real_rows, variant, inputs);
  }

  std::shared_ptr<Event> CopyIn(BatchSlot* batch_slot) override {
    absl::MutexLock lock(&enqueue_mu_);  // the program enqueues one at a time
    auto& slot = static_cast<PipelineSlot&>(*batch_slot);
    slot.copy_in_called = Clock::now();
    slot.batch_status = health();
    if (slot.batch_status.ok()) {
      slot.batch_status = Annotate(slot.ComputeDerived(), "derived inputs");
    }
    const auto& inputs = program_->signature().inputs;
    for (size_t i = 0; i < inputs.size() && slot.batch_status.ok(); ++i) {
      slot.batch_status =
          Annotate(CopyInputIn(slot.inputs()[i], slot.input_pieces(i)),
                   "copy of input '" + inputs[i].name + "' to the device");
    }
    DeviceEvent* recorded = Record(slot, *slot.copied_in, *copy_in_stream_);
    slot.copy_in_done = std::make_shared<Event>();
    copy_in_waiter_->Add({recorded, slot.batch_status, nullptr,
                          slot.copy_in_done, "copy in", &slot.copy_in_done_at});
    return slot.copy_in_done;
  }

  std::shared_ptr<Event> Run(BatchSlot* batch_slot) override {
    absl::MutexLock lock(&enqueue_mu_);  // the program enqueues one at a time
    auto& slot = static_cast<PipelineSlot&>(*batch_slot);
    slot.run_called = Clock::now();
    if (slot.batch_status.ok()) {
      slot.batch_status = Annotate(
          device_->StreamWaitEvent(*compute_stream_, *slot.copied_in), "run");
    }
    if (slot.batch_status.ok()) {
      std::vector<const void*> in;
      std::vector<void*> out;
      for (StagedTensor& t : slot.inputs()) in.push_back(t.device->data());
      for (StagedTensor& t : slot.outputs()) out.push_back(t.device->data());
      slot.batch_status = Annotate(
          program_->Enqueue(*compute_stream_, slot.input_shapes(), in, out),
          "run on " + device_->name());
    }
    DeviceEvent* recorded = Record(slot, *slot.computed, *compute_stream_);
    slot.run_done = std::make_shared<Event>();
    compute_waiter_->Add({recorded, slot.batch_status, slot.copy_in_done,
                          slot.run_done, "run", &slot.run_done_at});
    return slot.run_done;
  }

  std::shared_ptr<Event> CopyOut(BatchSlot* batch_slot) override {
    absl::MutexLock lock(&enqueue_mu_);  // the program enqueues one at a time
    auto& slot = static_cast<PipelineSlot&>(*batch_slot);
    slot.copy_out_called = Clock::now();
    if (slot.batch_status.ok()) {
      slot.batch_status =
          Annotate(device_->StreamWaitEvent(*copy_out_stream_, *slot.computed),
                   "copy out");
    }
    const auto& outputs = program_->signature().outputs;
    for (size_t i = 0; i < outputs.size() && slot.batch_status.ok(); ++i) {
      slot.batch_status =
          Annotate(CopyOutputOut(slot.outputs()[i], slot.output_pieces(i)),
                   "copy of output '" + outputs[i].name + "' from the device");
    }
    DeviceEvent* recorded = Record(slot, *slot.copied_out, *copy_out_stream_);
    auto done = std::make_shared<Event>();
    copy_out_waiter_->Add({recorded, slot.batch_status, slot.run_done, done,
                           "copy out", &slot.copy_out_done_at});
    return done;
  }

  absl::Status health() const override {
    absl::MutexLock lock(&mu_);
    return health_;
  }

 private:
  // One input's copies to its device buffer: from host staging, except the
  // pieces in shared device memory, copied device to device.
  absl::Status CopyInputIn(StagedTensor& t,
                           const std::vector<DevicePiece>& pieces) {
    char* device = static_cast<char*>(t.device->data());
    const char* host = static_cast<const char*>(t.host->data());
    if (pieces.empty()) {  // the common case: no std::function built
      return device_->CopyToDevice(*copy_in_stream_, device, host,
                                   t.staged_bytes);
    }
    return SplitCopy(
        t.staged_bytes, pieces,
        [&](size_t at, size_t bytes) {
          return device_->CopyToDevice(*copy_in_stream_, device + at, host + at,
                                       bytes);
        },
        [&](const DevicePiece& piece) {
          return device_->CopyOnDevice(*copy_in_stream_, device + piece.offset,
                                       piece.device, piece.bytes);
        });
  }

  // One output's copies from its device buffer: to host staging, except
  // the pieces that go to shared device memory, copied device to device.
  absl::Status CopyOutputOut(StagedTensor& t,
                             const std::vector<DevicePiece>& pieces) {
    const char* device = static_cast<const char*>(t.device->data());
    char* host = static_cast<char*>(t.host->data());
    if (pieces.empty()) {  // the common case: no std::function built
      return device_->CopyToHost(*copy_out_stream_, host, device, t.bytes);
    }
    return SplitCopy(
        t.bytes, pieces,
        [&](size_t at, size_t bytes) {
          return device_->CopyToHost(*copy_out_stream_, host + at, device + at,
                                     bytes);
        },
        [&](const DevicePiece& piece) {
          return device_->CopyOnDevice(*copy_out_stream_, piece.device,
                                       device + piece.offset, piece.bytes);
        });
  }

  // A tensor of `total` bytes with pieces in shared device memory: `staged`
  // for each range no piece covers, then `shared` for each piece.
  static absl::Status SplitCopy(
      size_t total, const std::vector<DevicePiece>& pieces,
      const std::function<absl::Status(size_t at, size_t bytes)>& staged,
      const std::function<absl::Status(const DevicePiece&)>& shared) {
    for (const auto& [begin, end] : Uncovered(pieces, total)) {
      if (absl::Status s = staged(begin, end - begin); !s.ok()) return s;
    }
    for (const DevicePiece& piece : pieces) {
      absl::Status s = shared(piece);
      if (!s.ok()) return WithContext(s, "shared device memory");
    }
    return absl::OkStatus();
  }

  // Records `event` on `stream` after this step's work, even when the batch
  // already failed (part of it may be enqueued), so that the step's Event
  // completes only once everything enqueued for it has finished. Returns the
  // event to synchronize, or null when there is none; then the batch fails:
  // on an unusable device the step's work will never run, and after a failed
  // record nothing tells when it has, so the instance is marked unusable.
  DeviceEvent* Record(PipelineSlot& slot, DeviceEvent& event,
                      DeviceStream& stream) {
    absl::Status status = health();
    if (status.ok()) {
      status = device_->RecordEvent(event, stream);
      if (status.ok()) return &event;
      MarkUnhealthy(status);
      status = WithContext(status, "device event");
    }
    if (slot.batch_status.ok()) slot.batch_status = status;
    return nullptr;
  }

  absl::Status Annotate(const absl::Status& status, const std::string& what) {
    if (status.ok()) return status;
    if (device_->IsSticky(status)) MarkUnhealthy(status);
    return WithContext(status, what);
  }

  void MarkUnhealthy(const absl::Status& status) {
    absl::MutexLock lock(&mu_);
    if (health_.ok()) {
      health_ = absl::Status(
          status.code(), absl::StrCat("instance unusable after a fault on ",
                                      device_->name(), ": ", status.message()));
    }
  }

  const std::shared_ptr<Device> device_;
  const std::unique_ptr<DeviceProgram> program_;
  const int ordinal_;
  const std::shared_ptr<const DerivedInputs> derived_;  // may be null
  std::vector<std::unique_ptr<PipelineSlot>> slots_;
  std::unique_ptr<DeviceStream> copy_in_stream_, compute_stream_,
      copy_out_stream_;
  std::unique_ptr<StreamWaiter> copy_in_waiter_, compute_waiter_,
      copy_out_waiter_;
  // Held while a step is enqueued: slots may be driven from several threads,
  // and a program's Enqueue must not run twice at once.
  absl::Mutex enqueue_mu_;
  mutable absl::Mutex mu_;
  absl::Status health_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<PipelinedExecutor>> CreatePipelinedExecutor(
    std::shared_ptr<Device> device, std::unique_ptr<DeviceProgram> program,
    const PipelinedExecutorOptions& options) {
  if (device == nullptr || program == nullptr) {
    return absl::InvalidArgumentError(
        "pipelined executor: null device or program");
  }
  if (options.num_slots < 1) {
    return absl::InvalidArgumentError(
        "pipelined executor: num_slots must be >= 1");
  }
  auto executor = std::make_unique<PipelinedExecutorImpl>(
      std::move(device), std::move(program), options.device_ordinal,
      options.derived);
  if (absl::Status s = executor->Init(options.num_slots); !s.ok()) return s;
  return executor;
}

}  // namespace coalesce
