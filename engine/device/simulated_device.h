// SimulatedDevice: a Device that runs on the host, so the pipelined executor's
// stream ordering, double buffering and error handling are tested without a
// GPU (CI has none).
//
// Each stream is a FIFO run by its own thread. Device and pinned memory are
// host memory, counted against the capacities in Options (ResourceExhausted
// past them). Copies are memcpy; kernels are host functions given to Launch.
// Every copy or kernel ("op") takes modelled time (slept on its stream's
// thread: Options for copies, Kernel::duration for kernels), and is recorded
// in a timeline with real times and a logical clock: every op start and end
// takes the next tick, so "A started before B ended" is exact.
//
// Checks made while ops run, reported by problems():
//   - a race: two running ops touch overlapping memory and one writes it
//     (what reusing a slot's buffers too early would cause);
//   - a copy whose host side is not pinned memory from this device.
//
// Control for tests: Hold/Release stop op number `index` of a kind at its
// start (it counts as running while held), so overlap is asserted without
// timing; FailNextEnqueue makes an enqueue call fail (not sticky);
// FaultOnRun makes an op fault while it runs (sticky, as a CUDA kernel fault:
// every later call fails with that status). Ops of one kind are numbered in
// enqueue order from 0, across streams; a graph's ops are numbered each time
// it is launched.
//
// Graph capture records a stream's copies and kernels instead of queueing
// them; LaunchGraph queues copies of them.
//
// Thread-safe. Destroy every stream, event and buffer before the device.
#ifndef COALESCE_ENGINE_DEVICE_SIMULATED_DEVICE_H_
#define COALESCE_ENGINE_DEVICE_SIMULATED_DEVICE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/device/device.h"

namespace coalesce {

class SimulatedDevice : public Device {
 public:
  enum class OpKind { kCopyToDevice, kCopyToHost, kCopyOnDevice, kKernel };

  struct Options {
    size_t device_memory_bytes = size_t{1} << 30;
    size_t pinned_memory_bytes = size_t{1} << 30;
    // A host<->device copy of n bytes takes copy_latency +
    // n / copy_bytes_per_second; device-to-device copies take no time
    // (0 bytes per second: only the latency).
    std::chrono::microseconds copy_latency{0};
    double copy_bytes_per_second = 0;
  };

  struct MemoryRegion {
    const void* begin = nullptr;
    size_t bytes = 0;
  };

  // One kernel launch: what it reads and writes (for the race check), how
  // long it takes, and its effect. A non-OK body is a sticky fault.
  struct Kernel {
    std::string name;
    std::vector<MemoryRegion> reads;
    std::vector<MemoryRegion> writes;
    std::chrono::microseconds duration{0};
    std::function<absl::Status()> body;
  };

  // One finished op.
  struct OpRecord {
    OpKind kind;
    int index = 0;   // among ops of its kind, in enqueue order
    int stream = 0;  // streams are numbered from 0 in creation order
    std::string name;
    int64_t start_tick = 0;
    int64_t end_tick = 0;
    std::chrono::steady_clock::time_point start, end;
    absl::Status status;  // not OK: it faulted, or the device had already
    size_t bytes = 0;     // a copy's
  };

  explicit SimulatedDevice(Options options);
  SimulatedDevice() : SimulatedDevice(Options{}) {}
  ~SimulatedDevice() override;

  std::string name() const override { return "simulated"; }
  absl::StatusOr<std::unique_ptr<DeviceStream>> CreateStream() override;
  absl::StatusOr<std::unique_ptr<DeviceEvent>> CreateEvent() override;
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocateDevice(
      size_t bytes) override;
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocatePinnedHost(
      size_t bytes) override;
  absl::Status CopyToDevice(DeviceStream& stream, void* device_dst,
                            const void* host_src, size_t bytes) override;
  absl::Status CopyToHost(DeviceStream& stream, void* host_dst,
                          const void* device_src, size_t bytes) override;
  absl::Status CopyOnDevice(DeviceStream& stream, void* device_dst,
                            const void* device_src, size_t bytes) override;
  absl::Status RecordEvent(DeviceEvent& event, DeviceStream& stream) override;
  absl::Status StreamWaitEvent(DeviceStream& stream,
                               DeviceEvent& event) override;
  absl::Status SynchronizeEvent(DeviceEvent& event) override;
  bool IsSticky(const absl::Status& status) const override;

  absl::Status BeginCapture(DeviceStream& stream) override;
  absl::StatusOr<std::unique_ptr<DeviceGraph>> EndCapture(
      DeviceStream& stream) override;
  absl::Status LaunchGraph(DeviceGraph& graph, DeviceStream& stream) override;

  // Enqueues a kernel on `stream`.
  absl::Status Launch(DeviceStream& stream, Kernel kernel);

  void FailNextEnqueue(OpKind kind, absl::Status status);
  void FaultOnRun(OpKind kind, int index, absl::Status status);
  void Hold(OpKind kind, int index);
  void Release(OpKind kind, int index);
  void ReleaseAll();  // e.g. before a failed test tears down
  // Bounded waits for tests: true once op `index` of `kind` has started
  // (ended) within `timeout`.
  bool AwaitStart(OpKind kind, int index, absl::Duration timeout);
  bool AwaitEnd(OpKind kind, int index, absl::Duration timeout);

  std::vector<OpRecord> timeline() const;  // in end order
  std::vector<std::string> problems() const;
  size_t device_bytes_in_use() const;
  // AllocateDevice and AllocatePinnedHost calls so far.
  int64_t allocation_count() const;
  // Graphs captured (EndCapture) and launched (LaunchGraph) so far.
  int64_t graphs_captured() const;
  int64_t graph_launches() const;

 private:
  class SimStream;
  class SimEvent;
  class SimBuffer;
  class SimGraph;
  struct Op;
  using OpKey = std::pair<OpKind, int>;

  absl::Status EnqueueOp(DeviceStream& stream, Op op);
  // Numbers a work op, checks its host memory and models its duration, then
  // queues it on `stream`.
  void PushWork(SimStream& stream, Op op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status EnqueueCopy(DeviceStream& stream, OpKind kind, void* dst,
                           const void* src, size_t bytes);
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes,
                                                         bool pinned);
  void Free(const SimBuffer& buffer);
  // Called on a stream's thread.
  void RunOp(Op& op);
  void BeginOp(Op& op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckRaces(const Op& op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool IsPinned(const void* p, size_t bytes) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReachEvent(SimEvent& event, int64_t generation);
  void WaitForEvent(SimEvent& event, int64_t generation);

  const Options options_;
  mutable absl::Mutex mu_;
  absl::Status sticky_ ABSL_GUARDED_BY(mu_);
  int next_stream_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<OpKind, int> next_index_ ABSL_GUARDED_BY(mu_);
  std::map<OpKind, absl::Status> fail_next_enqueue_ ABSL_GUARDED_BY(mu_);
  std::map<OpKey, absl::Status> fault_on_run_ ABSL_GUARDED_BY(mu_);
  std::set<OpKey> held_ ABSL_GUARDED_BY(mu_);
  std::set<OpKey> started_ ABSL_GUARDED_BY(mu_);
  std::set<OpKey> ended_ ABSL_GUARDED_BY(mu_);
  std::vector<const Op*> running_ ABSL_GUARDED_BY(mu_);
  int64_t tick_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<OpRecord> timeline_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> problems_ ABSL_GUARDED_BY(mu_);
  size_t device_in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t allocations_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t graphs_captured_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t graph_launches_ ABSL_GUARDED_BY(mu_) = 0;
  size_t pinned_in_use_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<const char*, size_t> pinned_ ABSL_GUARDED_BY(mu_);  // begin->size
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_SIMULATED_DEVICE_H_
