#include "engine/cpu_executor.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/aligned_buffer.h"
#include "engine/cpu_stream.h"
#include "engine/execution_plan.h"
#include "engine/plan_cache.h"
#include "engine/string_io.h"
#include "engine/string_ref.h"
#include "engine/string_store.h"
#include "engine/token_packed_plans.h"
#include "kernels/cpu/denormals.h"
#include "kernels/cpu/threading.h"

namespace coalesce {
namespace {

using Clock = std::chrono::steady_clock;

// Used only on an instance's worker thread, by one batch at a time.
struct WorkerScratch {
  AlignedBuffer arena;
  StringStore strings;  // strings made during the running batch
};

class CpuBatchSlot : public BatchSlot {
 public:
  // `packed` (may be null) is the instance's, used on its worker only.
  CpuBatchSlot(PlanCache* plans, TokenPackedPlans* packed, NodeProfile* profile,
               NodeProfile* packed_profile)
      : plans_(plans),
        packed_(packed),
        profile_(profile),
        packed_profile_(packed_profile) {}

  absl::Status SetInputShapes(const std::vector<Shape>& shapes) override {
    plan_ = nullptr;
    shapes_ = shapes;
    absl::StatusOr<std::shared_ptr<const ExecutionPlan>> plan =
        plans_->Get(shapes);
    if (!plan.ok()) return plan.status();
    const ExecutionPlan& p = **plan;
    inputs_.resize(p.num_inputs());
    outputs_.resize(p.num_outputs());
    // BYTES sizes come later: SetInputByteSize, and the run for outputs.
    input_bytes_.assign(p.num_inputs(), 0);
    output_bytes_.assign(p.num_outputs(), 0);
    for (int i = 0; i < p.num_inputs(); ++i) {
      if (p.input_dtype(i) == DataType::kBytes) continue;
      if (absl::Status s = inputs_[i].Reserve(p.input_byte_size(i)); !s.ok())
        return s;
      input_bytes_[i] = p.input_byte_size(i);
    }
    for (int i = 0; i < p.num_outputs(); ++i) {
      if (p.output_dtype(i) == DataType::kBytes) continue;
      if (absl::Status s = outputs_[i].Reserve(p.output_byte_size(i)); !s.ok())
        return s;
      output_bytes_[i] = p.output_byte_size(i);
    }
    plan_ = *std::move(plan);
    return absl::OkStatus();
  }

  absl::Status SetInputByteSize(int index, size_t byte_size) override {
    if (plan_ == nullptr) {
      return absl::FailedPreconditionError(
          "SetInputByteSize without a successful SetInputShapes");
    }
    if (index < 0 || index >= plan_->num_inputs()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "no input ", index, "; the model has ", plan_->num_inputs()));
    }
    if (plan_->input_dtype(index) != DataType::kBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", plan_->input_name(index), "' is ",
          std::string(DataTypeName(plan_->input_dtype(index))), ", not BYTES"));
    }
    if (absl::Status s = inputs_[index].Reserve(byte_size); !s.ok()) return s;
    input_bytes_[index] = byte_size;
    return absl::OkStatus();
  }

  char* input_data(int index) override { return inputs_[index].data(); }
  size_t input_byte_size(int index) const override {
    return input_bytes_[index];
  }
  const Shape& output_shape(int index) const override {
    return plan_->output_shape(index);
  }
  const char* output_data(int index) const override {
    return outputs_[index].data();
  }
  size_t output_byte_size(int index) const override {
    return output_bytes_[index];
  }
  StepTimings timings() const override { return timings_; }

  // Worker-thread side. The protocol keeps the owner off the slot between
  // CopyIn and CopyOut's completion; the stream's queue orders the accesses.
  absl::Status BeginBatch() {
    status_ = plan_ ? absl::OkStatus()
                    : absl::FailedPreconditionError(
                          "CopyIn without a successful SetInputShapes");
    timings_ = StepTimings{};
    return status_;
  }

  absl::Status RunBatch(WorkerScratch& scratch) {
    if (!status_.ok()) return status_;
    // A batch the packed form cannot take (its plan fails to build) runs
    // padded: right, only not faster.
    if (packed_ != nullptr) {
      auto packed = packed_->PlanFor(
          shapes_, inputs_[packed_->mask_input()].data(), *plan_, &indices_);
      if (packed.ok() && *packed != nullptr)
        return status_ = RunPacked(**packed, scratch);
    }
    status_ = scratch.arena.Reserve(plan_->arena_bytes());
    if (!status_.ok()) return status_;
    scratch.strings.Clear();
    char* const arena = scratch.arena.data();
    // Members, so that no batch after the first allocates them.
    std::vector<const char*>& in = input_pointers_;
    std::vector<char*>& out = output_pointers_;
    in.assign(inputs_.size(), nullptr);
    out.assign(outputs_.size(), nullptr);
    for (size_t i = 0; i < in.size(); ++i) {
      in[i] = inputs_[i].data();
      if (plan_->input_dtype(i) != DataType::kBytes) continue;
      char* handles = arena + plan_->string_input_offset(i);
      status_ = ParseInput(i, reinterpret_cast<StringRef*>(handles));
      if (!status_.ok()) return status_;
      in[i] = handles;
    }
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = plan_->output_dtype(i) == DataType::kBytes
                   ? arena + plan_->string_output_offset(i)
                   : outputs_[i].data();
    }
    status_ = plan_->Execute(
        in, out, arena, {.profile = profile_, .strings = &scratch.strings});
    for (size_t i = 0; i < out.size() && status_.ok(); ++i) {
      if (plan_->output_dtype(i) == DataType::kBytes)
        status_ = SerializeOutput(i, reinterpret_cast<StringRef*>(out[i]));
    }
    return status_;
  }

  const absl::Status& status() const { return status_; }
  StepTimings& mutable_timings() { return timings_; }

 private:
  // The batch on the packed model's `plan`: the inputs, then indices_'s
  // pack, unpack and spread indices; the outputs into the padded plan's
  // buffers, which they fill exactly (TokenPackedPlans::PlanFor checked). No
  // BYTES.
  absl::Status RunPacked(const ExecutionPlan& plan, WorkerScratch& scratch) {
    if (absl::Status s = scratch.arena.Reserve(plan.arena_bytes()); !s.ok())
      return s;
    std::vector<const char*>& in = input_pointers_;
    std::vector<char*>& out = output_pointers_;
    in.clear();
    for (const AlignedBuffer& input : inputs_) in.push_back(input.data());
    in.push_back(reinterpret_cast<const char*>(indices_.pack.data()));
    in.push_back(reinterpret_cast<const char*>(indices_.unpack.data()));
    in.push_back(reinterpret_cast<const char*>(indices_.spread.data()));
    out.clear();
    for (AlignedBuffer& output : outputs_) out.push_back(output.data());
    return plan.Execute(
        in, out, scratch.arena.data(),
        {.profile = packed_profile_, .strings = &scratch.strings});
  }

  // Points `handles` at the elements of BYTES input i's serialized buffer.
  absl::Status ParseInput(size_t i, StringRef* handles) const {
    const int64_t count = plan_->input_byte_size(i) / sizeof(StringRef);
    absl::Status s = ParseSerializedStrings(inputs_[i].data(), input_bytes_[i],
                                            count, handles);
    if (s.ok()) return s;
    return absl::InvalidArgumentError(
        absl::StrCat("input '", plan_->input_name(i), "': ", s.message()));
  }

  // Serializes BYTES output i's handles into its output buffer.
  absl::Status SerializeOutput(size_t i, const StringRef* handles) {
    const int64_t count = plan_->output_byte_size(i) / sizeof(StringRef);
    absl::StatusOr<size_t> bytes = SerializedStringsSize(handles, count);
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output '", plan_->output_name(i), "': ", bytes.status().message()));
    }
    if (absl::Status s = outputs_[i].Reserve(*bytes); !s.ok()) return s;
    SerializeStrings(handles, count, outputs_[i].data());
    output_bytes_[i] = *bytes;
    return absl::OkStatus();
  }

  PlanCache* const plans_;
  TokenPackedPlans* const packed_;     // may be null
  NodeProfile* const profile_;         // may be null
  NodeProfile* const packed_profile_;  // may be null
  std::shared_ptr<const ExecutionPlan> plan_;
  std::vector<Shape> shapes_;  // the batch's input shapes
  PackingIndices indices_;     // the packed batch's, reused
  std::vector<AlignedBuffer> inputs_;
  std::vector<AlignedBuffer> outputs_;
  // Bytes of each input and output buffer in use (serialized for BYTES).
  std::vector<size_t> input_bytes_, output_bytes_;
  absl::Status status_;
  StepTimings timings_;
  std::vector<const char*> input_pointers_;  // RunBatch's, reused
  std::vector<char*> output_pointers_;
};

// The plans an instance runs: on its worker's intra-op threads.
PlanOptions PlanOptionsOf(const CpuExecutorOptions& options) {
  return {.fuse_attention = options.fuse_attention,
          .intra_op_threads = options.intra_op_threads};
}

class CpuExecutorInstance : public ExecutorInstance {
 public:
  CpuExecutorInstance(std::shared_ptr<const Model> model,
                      const CpuExecutorOptions& options)
      : plans_(model, PlanCache::kDefaultMaxPlans, PlanOptionsOf(options)),
        // A profile of the model's own nodes without one of the packed
        // form's: profiled runs stay padded.
        packed_(options.profile == nullptr || options.packed_profile != nullptr
                    ? TokenPackedPlans::For(model, PlanOptionsOf(options))
                    : nullptr),
        stream_([options] {
          kernels::SetIntraOpThreads(options.intra_op_threads);
          if (options.flush_denormals) kernels::SetFlushDenormals(true);
        }) {
    for (int i = 0; i < options.num_slots; ++i) {
      slots_.push_back(std::make_unique<CpuBatchSlot>(
          &plans_, packed_.get(), options.profile, options.packed_profile));
    }
  }

  int num_slots() const override { return static_cast<int>(slots_.size()); }
  BatchSlot* slot(int index) override { return slots_[index].get(); }

  std::shared_ptr<Event> CopyIn(BatchSlot* slot) override {
    static constexpr Step kSteps[] = {&CopyInStep};
    return Enqueue(slot, kSteps);
  }

  std::shared_ptr<Event> Run(BatchSlot* slot) override {
    static constexpr Step kSteps[] = {&RunStep};
    return Enqueue(slot, kSteps);
  }

  std::shared_ptr<Event> CopyOut(BatchSlot* slot) override {
    static constexpr Step kSteps[] = {&CopyOutStep};
    return Enqueue(slot, kSteps);
  }

  // One task and one event for the whole batch.
  std::shared_ptr<Event> Submit(BatchSlot* slot) override {
    static constexpr Step kSteps[] = {&CopyInStep, &RunStep, &CopyOutStep};
    return Enqueue(slot, kSteps);
  }

 private:
  using Step =
      std::pair<absl::Status, std::chrono::nanoseconds StepTimings::*> (*)(
          CpuBatchSlot&, WorkerScratch&);

  static std::pair<absl::Status, std::chrono::nanoseconds StepTimings::*>
  CopyInStep(CpuBatchSlot& s, WorkerScratch&) {
    return {s.BeginBatch(), &StepTimings::copy_in};
  }
  static std::pair<absl::Status, std::chrono::nanoseconds StepTimings::*>
  RunStep(CpuBatchSlot& s, WorkerScratch& scratch) {
    return {s.RunBatch(scratch), &StepTimings::run};
  }
  // Outputs were written in place (BYTES ones serialized) by Run.
  static std::pair<absl::Status, std::chrono::nanoseconds StepTimings::*>
  CopyOutStep(CpuBatchSlot& s, WorkerScratch&) {
    return {s.status(), &StepTimings::copy_out};
  }

  // Queues `steps` on the worker as one task: each records its duration, and
  // the returned event completes with the last one's status (a failed step
  // makes the later ones fail with its status, as separate tasks would).
  template <size_t N>
  std::shared_ptr<Event> Enqueue(BatchSlot* slot, const Step (&steps)[N]) {
    auto event = std::make_shared<Event>();
    CpuBatchSlot* own = FindSlot(slot);
    if (own == nullptr) {
      event->Complete(
          absl::InvalidArgumentError("slot does not belong to this instance"));
      return event;
    }
    stream_.Enqueue([this, own, &steps, event] {
      absl::Status status;
      for (Step step : steps) {
        const Clock::time_point start = Clock::now();
        auto [step_status, field] = step(*own, scratch_);
        own->mutable_timings().*field = Clock::now() - start;
        status = std::move(step_status);
      }
      event->Complete(status);
    });
    return event;
  }

  CpuBatchSlot* FindSlot(BatchSlot* slot) {
    for (auto& s : slots_) {
      if (s.get() == slot) return s.get();
    }
    return nullptr;
  }

  PlanCache plans_;
  std::unique_ptr<TokenPackedPlans> packed_;  // null: every batch padded
  std::vector<std::unique_ptr<CpuBatchSlot>> slots_;
  WorkerScratch scratch_;  // used only on the worker thread
  CpuStream stream_;       // last: joined first on destruction
};

}  // namespace

absl::StatusOr<std::unique_ptr<ExecutorInstance>> CreateCpuExecutor(
    std::shared_ptr<const Model> model, const CpuExecutorOptions& options) {
  if (model == nullptr) return absl::InvalidArgumentError("model is null");
  if (options.intra_op_threads < 1 || options.num_slots < 1) {
    return absl::InvalidArgumentError(
        "intra_op_threads and num_slots must be at least 1");
  }
  if (options.profile != nullptr &&
      options.profile->size() != model->graph().nodes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the profile has ", options.profile->size(),
                     " nodes, the model ", model->graph().nodes.size()));
  }
  if (options.packed_profile != nullptr &&
      (model->packed() == nullptr ||
       options.packed_profile->size() !=
           model->packed()->graph().nodes.size())) {
    return absl::InvalidArgumentError(
        "the packed profile does not fit the model's packed form");
  }
  return std::make_unique<CpuExecutorInstance>(std::move(model), options);
}

}  // namespace coalesce
