#include "batching/fake_executor.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace coalesce {

class FakeExecutorInstance::Slot : public BatchSlot {
 public:
  Slot(int index, FakeExecutorInstance* owner)
      : index_(index), owner_(owner), specs_(&owner->options_.inputs) {}

  bool ReadyFor(const std::vector<Shape>& shapes) const override {
    absl::MutexLock lock(&owner_->mu_);
    auto it = owner_->sized_.find(Key(shapes));
    return (it == owner_->sized_.end() ? 0 : it->second) >=
           owner_->options_.setup_batches;
  }

  absl::Status SetInputShapes(const std::vector<Shape>& shapes) override {
    if (!next_error_.ok()) return std::exchange(next_error_, absl::OkStatus());
    if (shapes.size() != specs_->size()) {
      return absl::InvalidArgumentError("wrong number of inputs");
    }
    {
      absl::MutexLock lock(&owner_->mu_);
      needed_setup_ =
          owner_->sized_[Key(shapes)]++ < owner_->options_.setup_batches;
    }
    sized_by_ = std::this_thread::get_id();
    shapes_ = shapes;
    buffers_.assign(shapes.size(), std::string());
    for (size_t i = 0; i < shapes.size(); ++i) {
      const std::optional<int64_t> count = ElementCount(shapes[i]);
      if (!count.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", (*specs_)[i].name, "': bad shape"));
      }
      buffers_[i].assign(*count * ElementByteSize((*specs_)[i].dtype), '\0');
    }
    return absl::OkStatus();
  }
  absl::Status SetInputByteSize(int index, size_t byte_size) override {
    if ((*specs_)[index].dtype != DataType::kBytes) {
      return absl::InvalidArgumentError("not a BYTES input");
    }
    buffers_[index].assign(byte_size, '\0');
    return absl::OkStatus();
  }
  char* input_data(int index) override { return buffers_[index].data(); }
  size_t input_byte_size(int index) const override {
    return buffers_[index].size();
  }
  const Shape& output_shape(int index) const override {
    return outputs_[index].shape;
  }
  const char* output_data(int index) const override {
    return outputs_[index].data.data();
  }
  size_t output_byte_size(int index) const override {
    return outputs_[index].data.size();
  }
  StepTimings timings() const override { return timings_; }

  std::pair<int, std::vector<Shape>> Key(
      const std::vector<Shape>& shapes) const {
    return {owner_->options_.setup_per_slot ? index_ : -1, shapes};
  }

  int index_;
  FakeExecutorInstance* const owner_;
  const std::vector<TensorSpec>* specs_;
  std::thread::id sized_by_;
  bool needed_setup_ = false;
  absl::Status next_error_;
  std::vector<Shape> shapes_;
  std::vector<std::string> buffers_;
  std::vector<FakeOutput> outputs_;
  StepTimings timings_;
  std::shared_ptr<Event> run_, copy_out_;  // Of the batch last copied in.
};

namespace {

absl::Status EchoInputs(const FakeExecutorInstance::RecordedBatch& batch,
                        std::vector<FakeExecutorInstance::FakeOutput>* out) {
  for (size_t i = 0; i < batch.inputs.size(); ++i) {
    out->push_back({batch.input_shapes[i], batch.inputs[i]});
  }
  return absl::OkStatus();
}

}  // namespace

FakeExecutorInstance::FakeExecutorInstance(Options options)
    : options_(std::move(options)),
      auto_complete_(options_.auto_complete),
      output_fn_(EchoInputs) {
  for (int i = 0; i < options_.num_slots; ++i) {
    slots_.push_back(std::make_unique<Slot>(i, this));
  }
}

FakeExecutorInstance::~FakeExecutorInstance() = default;

void FakeExecutorInstance::SetOutputFunction(OutputFunction fn) {
  absl::MutexLock lock(&mu_);
  output_fn_ = std::move(fn);
}

void FakeExecutorInstance::SetHealth(absl::Status status) {
  absl::MutexLock lock(&mu_);
  health_ = std::move(status);
}

absl::Status FakeExecutorInstance::health() const {
  absl::MutexLock lock(&mu_);
  return health_;
}

void FakeExecutorInstance::FailNextSetInputShapes(absl::Status status) {
  absl::MutexLock lock(&mu_);
  for (auto& slot : slots_) slot->next_error_ = status;
}

void FakeExecutorInstance::AwaitBatches(int count) {
  absl::MutexLock lock(&mu_);
  auto enough = [this, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<int>(batches_.size()) >= count;
  };
  mu_.Await(absl::Condition(&enough));
}

std::vector<FakeExecutorInstance::RecordedBatch> FakeExecutorInstance::batches()
    const {
  absl::MutexLock lock(&mu_);
  return batches_;
}

int FakeExecutorInstance::pending_batches() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(in_flight_.size());
}

int FakeExecutorInstance::num_slots() const { return options_.num_slots; }

std::vector<int64_t> FakeExecutorInstance::PreparedBatchSizes(
    int64_t max_batch_size) const {
  std::vector<int64_t> sizes;
  for (int64_t b : options_.prepared_batch_sizes)
    if (b <= max_batch_size) sizes.push_back(b);
  return sizes;
}

int FakeExecutorInstance::PreparedVariants(
    const std::vector<Shape>& shapes) const {
  return options_.prepared_variants;
}

absl::Status FakeExecutorInstance::WritePreparedVariant(
    const std::vector<Shape>& shapes, int variant,
    std::vector<std::string>* data) const {
  if (options_.prepared_variants == 1) return absl::OkStatus();
  if (data->empty() || (*data)[0].empty())
    return absl::InvalidArgumentError("no input 0 to write the variant in");
  (*data)[0][0] = static_cast<char>(variant + 1);
  return absl::OkStatus();
}

BatchSlot* FakeExecutorInstance::slot(int index) { return slots_[index].get(); }

std::shared_ptr<Event> FakeExecutorInstance::CopyIn(BatchSlot* batch_slot) {
  Slot* slot = static_cast<Slot*>(batch_slot);
  absl::MutexLock lock(&mu_);
  InFlight flight{slot,
                  RecordedBatch{slot->index_, slot->shapes_, slot->buffers_,
                                std::this_thread::get_id(), slot->sized_by_,
                                slot->needed_setup_},
                  std::make_shared<Event>(), std::make_shared<Event>(),
                  std::make_shared<Event>()};
  slot->run_ = flight.run;
  slot->copy_out_ = flight.copy_out;
  batches_.push_back(flight.batch);
  in_flight_.push_back(std::move(flight));
  return in_flight_.back().copy_in;
}

std::shared_ptr<Event> FakeExecutorInstance::Run(BatchSlot* slot) {
  absl::MutexLock lock(&mu_);
  return static_cast<Slot*>(slot)->run_;
}

std::shared_ptr<Event> FakeExecutorInstance::CopyOut(BatchSlot* slot) {
  std::shared_ptr<Event> event;
  bool complete = false;
  {
    absl::MutexLock lock(&mu_);
    event = static_cast<Slot*>(slot)->copy_out_;
    complete = auto_complete_ && !in_flight_.empty();
  }
  if (complete) CompleteNextBatch();
  return event;
}

void FakeExecutorInstance::AutoCompleteFromNow() {
  int pending = 0;
  {
    absl::MutexLock lock(&mu_);
    auto_complete_ = true;
    pending = static_cast<int>(in_flight_.size());
  }
  for (int i = 0; i < pending; ++i) CompleteNextBatch();
}

void FakeExecutorInstance::CompleteNextBatch(absl::Status run_status) {
  InFlight flight;
  {
    absl::MutexLock lock(&mu_);
    if (in_flight_.empty()) return;  // Raced with auto-completion.
    flight = std::move(in_flight_.front());
    in_flight_.pop_front();
    std::vector<FakeOutput> outputs;
    if (run_status.ok()) run_status = output_fn_(flight.batch, &outputs);
    flight.slot->outputs_ = std::move(outputs);
    flight.slot->timings_ = options_.timings;
  }
  flight.copy_in->Complete(absl::OkStatus());
  flight.run->Complete(run_status);
  flight.copy_out->Complete(run_status);
}

}  // namespace coalesce
