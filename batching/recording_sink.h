// RecordingSink: a ResponseSink for tests that records what the batcher sent.
//
// The sink is owned by its request (and so by the batcher once queued); the
// test keeps the shared SinkRecord to inspect outputs, await Finish, and
// simulate a client cancelling. Thread-safe.
#ifndef COALESCE_BATCHING_RECORDING_SINK_H_
#define COALESCE_BATCHING_RECORDING_SINK_H_

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "batching/inference_request.h"

namespace coalesce {

class SinkRecord {
 public:
  struct Output {
    std::string name;
    DataType dtype;
    Shape shape;
    std::string data;        // empty when added on the device
    size_t byte_size = 0;    // as added
    bool on_device = false;  // AddDeviceOutput's
  };

  // Blocks until Finish has been called; returns its status.
  absl::Status AwaitFinish() const;
  bool finished() const;
  int finish_calls() const;
  // The outputs added so far. Read after AwaitFinish.
  std::deque<Output> outputs() const;

  void Cancel() { cancelled_ = true; }

 private:
  friend class RecordingSink;
  mutable absl::Mutex mu_;
  std::deque<Output> outputs_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> status_ ABSL_GUARDED_BY(mu_);
  int finish_calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<bool> cancelled_{false};
};

class RecordingSink : public ResponseSink {
 public:
  explicit RecordingSink(std::shared_ptr<SinkRecord> record)
      : record_(std::move(record)) {}

  char* AddOutput(const std::string& name, DataType dtype, const Shape& shape,
                  size_t byte_size) override;
  void AddDeviceOutput(const std::string& name, DataType dtype,
                       const Shape& shape, size_t byte_size) override;
  void Finish(const absl::Status& status) override;
  bool IsCancelled() const override { return record_->cancelled_; }

 private:
  std::shared_ptr<SinkRecord> record_;
};

}  // namespace coalesce

#endif  // COALESCE_BATCHING_RECORDING_SINK_H_
