#include "batching/sequence_batcher.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"

namespace coalesce {
namespace {

bool IsNoSequence(const CorrelationId& id) {
  if (const uint64_t* n = std::get_if<uint64_t>(&id)) return *n == 0;
  return std::get<std::string>(id).empty();
}

std::string IdText(const CorrelationId& id) {
  if (const uint64_t* n = std::get_if<uint64_t>(&id)) return absl::StrCat(*n);
  return absl::StrCat("'", std::get<std::string>(id), "'");
}

bool IsStateOrControl(const SequenceOptions& options, const std::string& name) {
  for (const SequenceControl& c : options.controls) {
    if (c.input_name == name) return true;
  }
  for (const SequenceState& s : options.states) {
    if (s.input_name == name || s.output_name == name) return true;
  }
  return false;
}

std::vector<TensorSpec> ClientTensors(const std::vector<TensorSpec>& specs,
                                      const SequenceOptions& options) {
  std::vector<TensorSpec> client;
  for (const TensorSpec& spec : specs) {
    if (!IsStateOrControl(options, spec.name)) client.push_back(spec);
  }
  return client;
}

// The bytes of a CORRID control input for `id` (checked by CheckRequest).
std::string CorrelationIdBytes(const CorrelationId& id, DataType dtype) {
  if (dtype == DataType::kBytes) {
    const std::string text = std::holds_alternative<uint64_t>(id)
                                 ? absl::StrCat(std::get<uint64_t>(id))
                                 : std::get<std::string>(id);
    const uint32_t length = static_cast<uint32_t>(text.size());
    std::string bytes(sizeof(length), '\0');
    std::memcpy(bytes.data(), &length, sizeof(length));  // Little-endian host.
    return bytes + text;
  }
  const uint64_t value = std::get<uint64_t>(id);
  std::string bytes(ElementByteSize(dtype), '\0');
  if (bytes.size() == sizeof(uint64_t)) {
    std::memcpy(bytes.data(), &value, sizeof(value));
  } else {
    const uint32_t narrow = static_cast<uint32_t>(value);
    std::memcpy(bytes.data(), &narrow, sizeof(narrow));
  }
  return bytes;
}

std::string ControlBytes(const SequenceControl& control,
                         const SequenceFlags& flags) {
  switch (control.kind) {
    case SequenceControl::Kind::kStart:
      return flags.start ? control.true_value : control.false_value;
    case SequenceControl::Kind::kEnd:
      return flags.end ? control.true_value : control.false_value;
    case SequenceControl::Kind::kReady:
      // Every row sent is a real request of its sequence.
      return control.true_value;
    case SequenceControl::Kind::kCorrelationId:
      return CorrelationIdBytes(flags.id, control.dtype);
  }
  return {};
}

// InvalidArgument when `id` cannot be written into a CORRID of `dtype`.
absl::Status CheckCorrelationId(const CorrelationId& id,
                                const SequenceControl& control) {
  if (control.dtype == DataType::kBytes) return absl::OkStatus();
  if (!std::holds_alternative<uint64_t>(id)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sequence ", IdText(id), ": control input '", control.input_name,
        "' takes an integer correlation ID (",
        std::string(DataTypeName(control.dtype)), "), not a string"));
  }
  const uint64_t value = std::get<uint64_t>(id);
  uint64_t max = std::numeric_limits<uint64_t>::max();
  if (control.dtype == DataType::kInt64) {
    max = std::numeric_limits<int64_t>::max();
  } else if (control.dtype == DataType::kUint32) {
    max = std::numeric_limits<uint32_t>::max();
  } else if (control.dtype == DataType::kInt32) {
    max = std::numeric_limits<int32_t>::max();
  }
  if (value > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sequence ", value, ": the correlation ID does not fit control input '",
        control.input_name, "' (", std::string(DataTypeName(control.dtype)),
        ")"));
  }
  return absl::OkStatus();
}

}  // namespace

struct SequenceBatcher::Sequence {
  CorrelationId id;
  bool active = false;   // Holds a place (else waits in waiting_).
  bool busy = false;     // A request of it is in the DynamicBatcher.
  bool started = false;  // A START was sent and no END since.
  std::deque<std::unique_ptr<InferenceRequest>> pending;
  std::vector<StateValue> state;
  Clock::TimePoint last_request;
};

// The sink of a request sent to the DynamicBatcher: keeps the control
// tensors' bytes, captures state outputs, forwards the rest to the client.
class SequenceBatcher::StepSink : public ResponseSink {
 public:
  StepSink(SequenceBatcher* owner, Sequence* sequence, bool end,
           std::unique_ptr<ResponseSink> client)
      : owner_(owner),
        sequence_(sequence),
        end_(end),
        client_(std::move(client)) {
    state_.resize(owner_->options_.states.size());
  }

  // Control tensor bytes; views into them stay valid while the sink lives.
  std::vector<std::string>& controls() { return controls_; }

  char* AddOutput(const std::string& name, DataType dtype, const Shape& shape,
                  size_t byte_size) override {
    const auto& states = owner_->options_.states;
    for (size_t i = 0; i < states.size(); ++i) {
      if (states[i].output_name != name) continue;
      state_[i].shape = shape;
      state_[i].bytes.resize(byte_size);
      return state_[i].bytes.data();
    }
    return client_->AddOutput(name, dtype, shape, byte_size);
  }
  void AddDeviceOutput(const std::string& name, DataType dtype,
                       const Shape& shape, size_t byte_size) override {
    client_->AddDeviceOutput(name, dtype, shape, byte_size);
  }

  void Finish(const absl::Status& status) override {
    std::vector<Step> next;
    Complete(status, &next);
    owner_->Submit(std::move(next));
  }

  bool IsCancelled() const override { return client_->IsCancelled(); }

  // Finish without sending on: the sequence's next steps go to `next`.
  void Complete(const absl::Status& status, std::vector<Step>* next) {
    owner_->StepDone(sequence_, end_, status.ok() ? &state_ : nullptr, next);
    client_->Finish(status);
    owner_->Answered();
  }

 private:
  SequenceBatcher* const owner_;
  Sequence* const sequence_;
  const bool end_;
  std::unique_ptr<ResponseSink> client_;
  std::vector<std::string> controls_;
  std::vector<StateValue> state_;
};

absl::StatusOr<std::unique_ptr<SequenceBatcher>> SequenceBatcher::Create(
    const SequenceOptions& sequence, const SchedulerOptions& scheduler,
    DynamicBatcher* batcher) {
  if (batcher == nullptr) {
    return absl::InvalidArgumentError("a sequence batcher needs a batcher");
  }
  if (absl::Status s = ValidateSequenceOptions(sequence, scheduler); !s.ok()) {
    return s;
  }
  auto created =
      absl::WrapUnique(new SequenceBatcher(sequence, scheduler, batcher));
  created->idle_thread_ = std::thread([b = created.get()] { b->IdleLoop(); });
  return created;
}

SequenceBatcher::SequenceBatcher(const SequenceOptions& sequence,
                                 const SchedulerOptions& scheduler,
                                 DynamicBatcher* batcher)
    : options_(sequence),
      model_name_(scheduler.model_name),
      batched_(scheduler.max_batch_size > 0),
      clock_(scheduler.clock),
      batcher_(batcher),
      client_validator_(scheduler.max_batch_size,
                        ClientTensors(scheduler.inputs, sequence),
                        ClientTensors(scheduler.outputs, sequence)) {
  for (const TensorSpec& spec : ClientTensors(scheduler.outputs, sequence)) {
    client_outputs_.push_back(spec.name);
  }
}

SequenceBatcher::~SequenceBatcher() {
  Shutdown();
  if (idle_thread_.joinable()) idle_thread_.join();
}

absl::Status SequenceBatcher::CheckRequest(
    const InferenceRequest& request) const {
  if (!request.sequence.has_value() || IsNoSequence(request.sequence->id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("inference request to model '", model_name_,
                     "' must specify a non-zero or non-empty correlation ID"));
  }
  for (const RequestInput& input : request.inputs) {
    if (IsStateOrControl(options_, input.name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", input.name,
          "' is a sequence control or state input; the server sets it"));
    }
  }
  absl::StatusOr<RequestLayout> layout = client_validator_.Validate(request);
  if (!layout.ok()) return layout.status();
  if (batched_ && layout->batch_size != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", model_name_,
                     "': a request of a sequence must have batch "
                     "size 1, got ",
                     layout->batch_size));
  }
  for (const SequenceControl& control : options_.controls) {
    if (control.kind != SequenceControl::Kind::kCorrelationId) continue;
    if (absl::Status s = CheckCorrelationId(request.sequence->id, control);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status SequenceBatcher::Enqueue(
    std::unique_ptr<InferenceRequest>* request) {
  if (request == nullptr || *request == nullptr ||
      (*request)->sink == nullptr) {
    return absl::InvalidArgumentError("a request needs a response sink");
  }
  if (absl::Status s = CheckRequest(**request); !s.ok()) return s;
  std::vector<Step> steps;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) {
      return absl::UnavailableError(
          absl::StrCat("model '", model_name_, "' is shutting down"));
    }
    const SequenceFlags& flags = *(*request)->sequence;
    auto it = sequences_.find(flags.id);
    if (it == sequences_.end()) {
      if (!flags.start) {
        return absl::InvalidArgumentError(absl::StrCat(
            "inference request for sequence ", IdText(flags.id), " to model '",
            model_name_,
            "' must specify the START flag on the first request of the "
            "sequence"));
      }
      auto sequence = std::make_unique<Sequence>();
      sequence->id = flags.id;
      if (active_ < options_.max_active_sequences) {
        sequence->active = true;
        ++active_;
      } else {
        waiting_.push_back(sequence.get());
      }
      it = sequences_.emplace(flags.id, std::move(sequence)).first;
    }
    Sequence* sequence = it->second.get();
    sequence->pending.push_back(std::move(*request));
    sequence->last_request = clock_->Now();
    ++unanswered_;
    Advance(sequence, &steps);
  }
  Submit(std::move(steps));
  return absl::OkStatus();
}

void SequenceBatcher::Advance(Sequence* sequence, std::vector<Step>* steps) {
  if (!sequence->active || sequence->busy) return;
  while (!sequence->pending.empty()) {
    std::unique_ptr<InferenceRequest> request =
        std::move(sequence->pending.front());
    sequence->pending.pop_front();
    Step step = MakeStep(sequence, std::move(request));
    const bool sent = step.failure.ok();
    steps->push_back(std::move(step));
    if (sent) {
      sequence->busy = true;
      return;
    }
  }
  if (!sequence->started) Release(sequence, steps);
}

void SequenceBatcher::Release(Sequence* sequence, std::vector<Step>* steps) {
  const bool was_active = sequence->active;
  sequences_.erase(sequence->id);  // Deletes *sequence.
  if (!was_active) return;
  --active_;
  while (active_ < options_.max_active_sequences && !waiting_.empty()) {
    Sequence* next = waiting_.front();
    waiting_.pop_front();
    next->active = true;
    ++active_;
    Advance(next, steps);
  }
}

SequenceBatcher::Step SequenceBatcher::MakeStep(
    Sequence* sequence, std::unique_ptr<InferenceRequest> request) {
  Step step;
  const SequenceFlags flags = *request->sequence;
  if (!flags.start && !sequence->started) {
    step.failure = absl::InvalidArgumentError(absl::StrCat(
        "inference request for sequence ", IdText(flags.id), " to model '",
        model_name_,
        "' must specify the START flag on the first request of the sequence "
        "(the sequence ended)"));
    step.request = std::move(request);
    return step;
  }
  if (flags.start) {
    sequence->started = true;
    sequence->state = InitialState();
  }
  auto sink = std::make_unique<StepSink>(this, sequence, flags.end,
                                         std::move(request->sink));
  const Shape control_shape = batched_ ? Shape{1, 1} : Shape{1};
  for (const SequenceControl& control : options_.controls) {
    sink->controls().push_back(ControlBytes(control, flags));
  }
  for (size_t i = 0; i < options_.controls.size(); ++i) {
    const SequenceControl& control = options_.controls[i];
    request->inputs.push_back(RequestInput{control.input_name, control.dtype,
                                           control_shape, sink->controls()[i]});
  }
  for (size_t i = 0; i < options_.states.size(); ++i) {
    const SequenceState& state = options_.states[i];
    request->inputs.push_back(RequestInput{state.input_name, state.dtype,
                                           sequence->state[i].shape,
                                           sequence->state[i].bytes});
  }
  if (request->requested_outputs.empty()) {
    request->requested_outputs = client_outputs_;
  }
  for (const SequenceState& state : options_.states) {
    request->requested_outputs.push_back(state.output_name);
    // The next step reads it from the host.
    request->device_outputs.erase(state.output_name);
  }
  request->sink = std::move(sink);
  step.request = std::move(request);
  return step;
}

std::vector<SequenceBatcher::StateValue> SequenceBatcher::InitialState() const {
  std::vector<StateValue> values;
  for (const SequenceState& state : options_.states) {
    StateValue value;
    value.shape = state.dims;
    if (batched_) value.shape.insert(value.shape.begin(), 1);
    const int64_t count = ElementCount(state.dims).value_or(0);
    value.bytes = state.initial.empty()
                      ? std::string(count * ElementByteSize(state.dtype), '\0')
                      : state.initial;
    values.push_back(std::move(value));
  }
  return values;
}

void SequenceBatcher::Submit(std::vector<Step> steps) {
  // A worklist, not recursion: a refused step completes at once and may
  // yield its sequence's next step.
  std::deque<Step> work(std::make_move_iterator(steps.begin()),
                        std::make_move_iterator(steps.end()));
  while (!work.empty()) {
    Step step = std::move(work.front());
    work.pop_front();
    if (!step.failure.ok()) {
      step.request->sink->Finish(step.failure);
      Answered();
      continue;
    }
    absl::Status status = batcher_->Enqueue(&step.request);
    if (status.ok()) continue;
    std::vector<Step> next;
    static_cast<StepSink*>(step.request->sink.get())->Complete(status, &next);
    for (Step& s : next) work.push_back(std::move(s));
  }
}

void SequenceBatcher::StepDone(Sequence* sequence, bool end,
                               std::vector<StateValue>* state,
                               std::vector<Step>* next) {
  absl::MutexLock lock(&mu_);
  // A failed request leaves the state as it was.
  if (state != nullptr) sequence->state = std::move(*state);
  sequence->busy = false;
  sequence->last_request = clock_->Now();
  if (end) sequence->started = false;
  Advance(sequence, next);  // May delete *sequence.
  cv_.SignalAll();
}

void SequenceBatcher::Answered() {
  absl::MutexLock lock(&mu_);
  if (--unanswered_ == 0) cv_.SignalAll();
}

void SequenceBatcher::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
  while (unanswered_ > 0) {
    clock_->WaitUntil(&mu_, &cv_, Clock::TimePoint::max());
  }
  exit_ = true;
  cv_.SignalAll();
}

void SequenceBatcher::IdleLoop() {
  mu_.Lock();
  while (!exit_) {
    const Clock::TimePoint now = clock_->Now();
    Clock::TimePoint wake = Clock::TimePoint::max();
    std::vector<Sequence*> idle;
    for (const auto& [id, sequence] : sequences_) {
      if (!sequence->active || sequence->busy || !sequence->pending.empty()) {
        continue;
      }
      const Clock::TimePoint release =
          AddSaturating(sequence->last_request, options_.max_sequence_idle);
      if (release <= now) {
        idle.push_back(sequence.get());
      } else {
        wake = std::min(wake, release);
      }
    }
    if (idle.empty()) {
      clock_->WaitUntil(&mu_, &cv_, wake);
      continue;
    }
    std::vector<Step> steps;
    for (Sequence* sequence : idle) Release(sequence, &steps);
    mu_.Unlock();
    Submit(std::move(steps));
    mu_.Lock();
  }
  mu_.Unlock();
}

int SequenceBatcher::ActiveSequences() const {
  absl::MutexLock lock(&mu_);
  return active_;
}

void SequenceBatcher::AwaitActiveSequences(int count) const {
  absl::MutexLock lock(&mu_);
  auto reached = [this, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return active_ == count;
  };
  mu_.Await(absl::Condition(&reached));
}

int SequenceBatcher::WaitingSequences() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(waiting_.size());
}

}  // namespace coalesce
