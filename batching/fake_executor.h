// FakeExecutorInstance: a hand-stepped ExecutorInstance for tests.
//
// It records every batch copied in (shapes and input bytes) and completes a
// batch's CopyIn/Run/CopyOut events only when the test calls
// CompleteNextBatch (or at once with auto_complete). Outputs are computed at
// completion by an OutputFunction (default: output k echoes input k). Errors
// can be injected into SetInputShapes and into Run. It can play a device
// whose first batches of a shape need setup (Options::setup_batches), and
// records which thread sized and copied in each batch. Completion callbacks run
// on the thread that calls CompleteNextBatch. Thread-safe.
#ifndef COALESCE_BATCHING_FAKE_EXECUTOR_H_
#define COALESCE_BATCHING_FAKE_EXECUTOR_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "engine/executor.h"
#include "engine/tensor_spec.h"

namespace coalesce {

class FakeExecutorInstance : public ExecutorInstance {
 public:
  struct RecordedBatch {
    int slot = 0;
    std::vector<Shape> input_shapes;
    std::vector<std::string> inputs;  // Bytes per input.
    std::thread::id copied_in_by;     // The thread that called CopyIn.
    std::thread::id sized_by;         // ... SetInputShapes.
    // Whether the slot was not ReadyFor these shapes (Options::
    // setup_batches): the batch "bound" or "captured" something.
    bool needed_setup = false;
  };
  struct FakeOutput {
    Shape shape;
    std::string data;
  };
  // Computes a batch's outputs, in model output order; a non-OK status fails
  // the batch's Run.
  using OutputFunction = std::function<absl::Status(
      const RecordedBatch& batch, std::vector<FakeOutput>* outputs)>;

  struct Options {
    int num_slots = 1;
    bool auto_complete = false;      // Complete each batch inside CopyOut.
    std::vector<TensorSpec> inputs;  // Full-shape dtypes for buffer sizes.
    StepTimings timings;             // Reported for every batch.
    // PreparedBatchSizes's answer (those up to max_batch_size).
    std::vector<int64_t> prepared_batch_sizes;
    // PreparedVariants's answer for every size; WritePreparedVariant
    // writes variant v as the byte v + 1 at the start of input 0.
    int prepared_variants = 1;
    // Like a device that binds a plan at a shape's first batch and captures
    // its graph at the second (2): slots are ReadyFor input shapes only once
    // this many batches of them were sized. 0: always ready.
    int setup_batches = 0;
    // Counts them per slot, as for graphs captured on a slot's buffers.
    bool setup_per_slot = false;
  };

  explicit FakeExecutorInstance(Options options);
  ~FakeExecutorInstance() override;

  void SetOutputFunction(OutputFunction fn);
  // The next SetInputShapes call returns `status`.
  void FailNextSetInputShapes(absl::Status status);
  // What health() answers from now on (a sticky fault when not OK).
  void SetHealth(absl::Status status);

  // Blocks until at least `count` batches have been copied in.
  void AwaitBatches(int count);
  std::vector<RecordedBatch> batches() const;
  int pending_batches() const;

  // Completes every pending batch, and every later one inside CopyOut.
  // For tear-down: lets a batcher drain.
  void AutoCompleteFromNow();

  // Completes the oldest batch not yet completed: CopyIn OK, then Run and
  // CopyOut with `run_status` (or the OutputFunction's error).
  // A no-op when nothing is pending.
  void CompleteNextBatch(absl::Status run_status = absl::OkStatus());

  int num_slots() const override;
  absl::Status health() const override;
  std::vector<int64_t> PreparedBatchSizes(
      int64_t max_batch_size) const override;
  int PreparedVariants(const std::vector<Shape>& shapes) const override;
  absl::Status WritePreparedVariant(
      const std::vector<Shape>& shapes, int variant,
      std::vector<std::string>* data) const override;
  BatchSlot* slot(int index) override;
  std::shared_ptr<Event> CopyIn(BatchSlot* slot) override;
  std::shared_ptr<Event> Run(BatchSlot* slot) override;
  std::shared_ptr<Event> CopyOut(BatchSlot* slot) override;

 private:
  class Slot;
  struct InFlight {
    Slot* slot;
    RecordedBatch batch;
    std::shared_ptr<Event> copy_in, run, copy_out;
  };

  const Options options_;
  std::vector<std::unique_ptr<Slot>> slots_;
  mutable absl::Mutex mu_;
  bool auto_complete_ ABSL_GUARDED_BY(mu_);
  OutputFunction output_fn_ ABSL_GUARDED_BY(mu_);
  std::vector<RecordedBatch> batches_ ABSL_GUARDED_BY(mu_);
  std::deque<InFlight> in_flight_ ABSL_GUARDED_BY(mu_);
  // Batches sized, by slot (-1 unless setup_per_slot) and input shapes
  // (for ReadyFor).
  std::map<std::pair<int, std::vector<Shape>>, int> sized_ ABSL_GUARDED_BY(mu_);
  absl::Status health_ ABSL_GUARDED_BY(mu_);
  friend class Slot;
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_FAKE_EXECUTOR_H_
