#include "engine/device/simulated_device.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/cpu_stream.h"

namespace coalesce {
namespace {

constexpr std::align_val_t kAlignment{256};

const char* KindName(SimulatedDevice::OpKind kind) {
  switch (kind) {
    case SimulatedDevice::OpKind::kCopyToDevice:
      return "copy_to_device";
    case SimulatedDevice::OpKind::kCopyToHost:
      return "copy_to_host";
    case SimulatedDevice::OpKind::kCopyOnDevice:
      return "copy_on_device";
    case SimulatedDevice::OpKind::kKernel:
      return "kernel";
  }
  return "?";
}

bool Overlaps(const SimulatedDevice::MemoryRegion& a,
              const SimulatedDevice::MemoryRegion& b) {
  const char* a0 = static_cast<const char*>(a.begin);
  const char* b0 = static_cast<const char*>(b.begin);
  return a.bytes > 0 && b.bytes > 0 && a0 < b0 + b.bytes && b0 < a0 + a.bytes;
}

bool AnyOverlap(const std::vector<SimulatedDevice::MemoryRegion>& a,
                const std::vector<SimulatedDevice::MemoryRegion>& b) {
  for (const auto& x : a) {
    for (const auto& y : b) {
      if (Overlaps(x, y)) return true;
    }
  }
  return false;
}

}  // namespace

// A copy, a kernel, or an event record/wait, as queued on a stream.
struct SimulatedDevice::Op {
  enum class Type { kWork, kRecord, kWait };
  Type type = Type::kWork;
  // kWork
  OpKind kind = OpKind::kKernel;
  int index = 0;
  int stream = 0;
  std::string name;
  std::vector<MemoryRegion> reads;
  std::vector<MemoryRegion> writes;
  std::chrono::microseconds duration{0};
  std::function<absl::Status()> body;
  int64_t start_tick = 0;
  std::chrono::steady_clock::time_point start;
  // kRecord, kWait
  SimEvent* event = nullptr;
  int64_t generation = 0;
};

class SimulatedDevice::SimEvent : public DeviceEvent {
 public:
  int64_t recorded = 0;  // guarded by the device's mu_
  int64_t reached = 0;   // guarded by the device's mu_
};

class SimulatedDevice::SimBuffer : public DeviceBuffer {
 public:
  SimBuffer(SimulatedDevice* device, size_t bytes, bool pinned)
      : device_(device),
        data_(static_cast<char*>(
            ::operator new(std::max<size_t>(bytes, 1), kAlignment))),
        size_(bytes),
        pinned_(pinned) {}
  ~SimBuffer() override {
    device_->Free(*this);
    ::operator delete(data_, kAlignment);
  }
  void* data() const override { return data_; }
  size_t size() const override { return size_; }
  bool pinned() const { return pinned_; }

 private:
  SimulatedDevice* device_;
  char* data_;
  size_t size_;
  bool pinned_;
};

// Ops run one at a time, in order, on the stream's own worker thread.
class SimulatedDevice::SimGraph : public DeviceGraph {
 public:
  explicit SimGraph(std::vector<Op> ops) : ops(std::move(ops)) {}
  const std::vector<Op> ops;
};

class SimulatedDevice::SimStream : public DeviceStream {
 public:
  SimStream(SimulatedDevice* device, int id)
      : id(id), device_(device), worker_(/*init=*/nullptr) {}
  void Push(Op op) {
    worker_.Enqueue([device = device_, op = std::move(op)]() mutable {
      device->RunOp(op);
    });
  }
  const int id;
  // Guarded by the device's mu_.
  bool capturing = false;
  std::vector<Op> captured;

 private:
  SimulatedDevice* const device_;
  CpuStream worker_;  // destroyed first: runs every queued op, then joins
};

SimulatedDevice::SimulatedDevice(Options options) : options_(options) {}
SimulatedDevice::~SimulatedDevice() = default;

absl::StatusOr<std::unique_ptr<DeviceStream>> SimulatedDevice::CreateStream() {
  absl::MutexLock lock(&mu_);
  if (!sticky_.ok()) return sticky_;
  return std::make_unique<SimStream>(this, next_stream_++);
}

absl::StatusOr<std::unique_ptr<DeviceEvent>> SimulatedDevice::CreateEvent() {
  absl::MutexLock lock(&mu_);
  if (!sticky_.ok()) return sticky_;
  return std::make_unique<SimEvent>();
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> SimulatedDevice::AllocateDevice(
    size_t bytes) {
  return Allocate(bytes, /*pinned=*/false);
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>>
SimulatedDevice::AllocatePinnedHost(size_t bytes) {
  return Allocate(bytes, /*pinned=*/true);
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> SimulatedDevice::Allocate(
    size_t bytes, bool pinned) {
  absl::MutexLock lock(&mu_);
  if (!sticky_.ok()) return sticky_;
  ++allocations_;
  size_t& in_use = pinned ? pinned_in_use_ : device_in_use_;
  const size_t capacity =
      pinned ? options_.pinned_memory_bytes : options_.device_memory_bytes;
  if (bytes > capacity - in_use) {
    return absl::ResourceExhaustedError(
        absl::StrCat("simulated device: out of ",
                     pinned ? "pinned host" : "device", " memory allocating ",
                     bytes, " bytes (", in_use, " of ", capacity, " in use)"));
  }
  in_use += bytes;
  auto buffer = std::make_unique<SimBuffer>(this, bytes, pinned);
  if (pinned) pinned_[static_cast<const char*>(buffer->data())] = bytes;
  return buffer;
}

void SimulatedDevice::Free(const SimBuffer& buffer) {
  absl::MutexLock lock(&mu_);
  if (buffer.pinned()) {
    pinned_in_use_ -= buffer.size();
    pinned_.erase(static_cast<const char*>(buffer.data()));
  } else {
    device_in_use_ -= buffer.size();
  }
}

bool SimulatedDevice::IsPinned(const void* p, size_t bytes) const {
  const char* c = static_cast<const char*>(p);
  auto it = pinned_.upper_bound(c);
  if (it == pinned_.begin()) return false;
  --it;
  return c + bytes <= it->first + it->second;
}

absl::Status SimulatedDevice::CopyToDevice(DeviceStream& stream,
                                           void* device_dst,
                                           const void* host_src, size_t bytes) {
  return EnqueueCopy(stream, OpKind::kCopyToDevice, device_dst, host_src,
                     bytes);
}

absl::Status SimulatedDevice::CopyToHost(DeviceStream& stream, void* host_dst,
                                         const void* device_src, size_t bytes) {
  return EnqueueCopy(stream, OpKind::kCopyToHost, host_dst, device_src, bytes);
}

absl::Status SimulatedDevice::CopyOnDevice(DeviceStream& stream,
                                           void* device_dst,
                                           const void* device_src,
                                           size_t bytes) {
  return EnqueueCopy(stream, OpKind::kCopyOnDevice, device_dst, device_src,
                     bytes);
}

absl::Status SimulatedDevice::EnqueueCopy(DeviceStream& stream, OpKind kind,
                                          void* dst, const void* src,
                                          size_t bytes) {
  Op op;
  op.kind = kind;
  op.reads = {{src, bytes}};
  op.writes = {{dst, bytes}};
  op.body = [=] {
    std::memmove(dst, src, bytes);
    return absl::OkStatus();
  };
  return EnqueueOp(stream, std::move(op));
}

absl::Status SimulatedDevice::Launch(DeviceStream& stream, Kernel kernel) {
  Op op;
  op.kind = OpKind::kKernel;
  op.name = std::move(kernel.name);
  op.reads = std::move(kernel.reads);
  op.writes = std::move(kernel.writes);
  op.duration = kernel.duration;
  op.body = std::move(kernel.body);
  return EnqueueOp(stream, std::move(op));
}

absl::Status SimulatedDevice::EnqueueOp(DeviceStream& stream, Op op) {
  auto& sim_stream = static_cast<SimStream&>(stream);
  absl::MutexLock lock(&mu_);
  if (!sticky_.ok()) return sticky_;
  if (op.type == Op::Type::kWork) {
    auto failing = fail_next_enqueue_.find(op.kind);
    if (failing != fail_next_enqueue_.end()) {
      absl::Status status = failing->second;
      fail_next_enqueue_.erase(failing);
      return status;
    }
    if (sim_stream.capturing) {
      sim_stream.captured.push_back(std::move(op));
      return absl::OkStatus();
    }
    PushWork(sim_stream, std::move(op));
    return absl::OkStatus();
  }
  sim_stream.Push(std::move(op));  // under mu_: queue order = index order
  return absl::OkStatus();
}

void SimulatedDevice::PushWork(SimStream& stream, Op op) {
  op.index = next_index_[op.kind]++;
  op.stream = stream.id;
  if (op.name.empty()) op.name = KindName(op.kind);
  if (op.kind == OpKind::kCopyToDevice || op.kind == OpKind::kCopyToHost) {
    const MemoryRegion& host =
        op.kind == OpKind::kCopyToDevice ? op.reads[0] : op.writes[0];
    if (!IsPinned(host.begin, host.bytes)) {
      problems_.push_back(
          absl::StrCat(op.name, " #", op.index, ": host memory is not pinned"));
    }
    if (options_.copy_bytes_per_second > 0) {
      op.duration = options_.copy_latency +
                    std::chrono::microseconds(static_cast<int64_t>(
                        1e6 * host.bytes / options_.copy_bytes_per_second));
    } else {
      op.duration = options_.copy_latency;
    }
  }
  stream.Push(std::move(op));  // under mu_: queue order = index order
}

absl::Status SimulatedDevice::BeginCapture(DeviceStream& stream) {
  auto& sim_stream = static_cast<SimStream&>(stream);
  absl::MutexLock lock(&mu_);
  if (!sticky_.ok()) return sticky_;
  if (sim_stream.capturing) {
    return absl::FailedPreconditionError("the stream is already capturing");
  }
  sim_stream.capturing = true;
  sim_stream.captured.clear();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DeviceGraph>> SimulatedDevice::EndCapture(
    DeviceStream& stream) {
  auto& sim_stream = static_cast<SimStream&>(stream);
  absl::MutexLock lock(&mu_);
  if (!sim_stream.capturing) {
    return absl::FailedPreconditionError("the stream is not capturing");
  }
  sim_stream.capturing = false;
  if (!sticky_.ok()) return sticky_;
  ++graphs_captured_;
  return std::make_unique<SimGraph>(std::move(sim_stream.captured));
}

absl::Status SimulatedDevice::LaunchGraph(DeviceGraph& graph,
                                          DeviceStream& stream) {
  auto& sim_stream = static_cast<SimStream&>(stream);
  absl::MutexLock lock(&mu_);
  if (!sticky_.ok()) return sticky_;
  if (sim_stream.capturing) {
    return absl::FailedPreconditionError(
        "cannot launch a graph while capturing");
  }
  ++graph_launches_;
  for (const Op& op : static_cast<SimGraph&>(graph).ops)
    PushWork(sim_stream, op);
  return absl::OkStatus();
}

int64_t SimulatedDevice::graphs_captured() const {
  absl::MutexLock lock(&mu_);
  return graphs_captured_;
}

int64_t SimulatedDevice::graph_launches() const {
  absl::MutexLock lock(&mu_);
  return graph_launches_;
}

absl::Status SimulatedDevice::RecordEvent(DeviceEvent& event,
                                          DeviceStream& stream) {
  auto& sim_event = static_cast<SimEvent&>(event);
  absl::MutexLock lock(&mu_);
  if (!sticky_.ok()) return sticky_;
  Op op;
  if (static_cast<SimStream&>(stream).capturing) {
    return absl::FailedPreconditionError(
        "event recorded on a capturing stream");
  }
  op.type = Op::Type::kRecord;
  op.event = &sim_event;
  op.generation = ++sim_event.recorded;
  static_cast<SimStream&>(stream).Push(std::move(op));
  return absl::OkStatus();
}

absl::Status SimulatedDevice::StreamWaitEvent(DeviceStream& stream,
                                              DeviceEvent& event) {
  auto& sim_event = static_cast<SimEvent&>(event);
  absl::MutexLock lock(&mu_);
  if (!sticky_.ok()) return sticky_;
  if (static_cast<SimStream&>(stream).capturing) {
    return absl::FailedPreconditionError("event waited on a capturing stream");
  }
  if (sim_event.recorded == 0) return absl::OkStatus();  // as CUDA: no-op
  Op op;
  op.type = Op::Type::kWait;
  op.event = &sim_event;
  op.generation = sim_event.recorded;
  static_cast<SimStream&>(stream).Push(std::move(op));
  return absl::OkStatus();
}

absl::Status SimulatedDevice::SynchronizeEvent(DeviceEvent& event) {
  auto& sim_event = static_cast<SimEvent&>(event);
  absl::MutexLock lock(&mu_);
  const int64_t generation = sim_event.recorded;
  WaitForEvent(sim_event, generation);
  return sticky_;
}

bool SimulatedDevice::IsSticky(const absl::Status& status) const {
  absl::MutexLock lock(&mu_);
  return !sticky_.ok() && status == sticky_;
}

void SimulatedDevice::WaitForEvent(SimEvent& event, int64_t generation) {
  auto reached = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return event.reached >= generation;
  };
  mu_.Await(absl::Condition(&reached));
}

void SimulatedDevice::RunOp(Op& op) {
  absl::MutexLock lock(&mu_);
  switch (op.type) {
    case Op::Type::kRecord:
      op.event->reached = std::max(op.event->reached, op.generation);
      return;
    case Op::Type::kWait:
      WaitForEvent(*op.event, op.generation);
      return;
    case Op::Type::kWork:
      break;
  }
  const OpKey key{op.kind, op.index};
  absl::Status status = sticky_;  // a faulted device runs nothing more
  if (status.ok()) {
    BeginOp(op);
    auto released = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return held_.count(key) == 0;
    };
    mu_.Await(absl::Condition(&released));
    auto fault = fault_on_run_.find(key);
    if (fault != fault_on_run_.end()) status = fault->second;
    mu_.Unlock();
    if (op.duration.count() > 0) std::this_thread::sleep_for(op.duration);
    if (status.ok() && op.body) status = op.body();
    mu_.Lock();
    running_.erase(std::find(running_.begin(), running_.end(), &op));
    if (!status.ok() && sticky_.ok()) sticky_ = status;
  } else {
    op.start_tick = ++tick_;
    op.start = std::chrono::steady_clock::now();
    started_.insert(key);
  }
  OpRecord record{
      op.kind,       op.index, op.stream, op.name,
      op.start_tick, ++tick_,  op.start,  std::chrono::steady_clock::now(),
      status};
  if (op.kind != OpKind::kKernel && !op.writes.empty())
    record.bytes = op.writes[0].bytes;
  timeline_.push_back(std::move(record));
  ended_.insert(key);
}

void SimulatedDevice::BeginOp(Op& op) {
  op.start_tick = ++tick_;
  op.start = std::chrono::steady_clock::now();
  started_.insert({op.kind, op.index});
  CheckRaces(op);
  running_.push_back(&op);
}

void SimulatedDevice::CheckRaces(const Op& op) {
  for (const Op* other : running_) {
    if (AnyOverlap(op.writes, other->reads) ||
        AnyOverlap(op.writes, other->writes) ||
        AnyOverlap(op.reads, other->writes)) {
      problems_.push_back(absl::StrCat(
          "race: ", op.name, " #", op.index, " started while ", other->name,
          " #", other->index, " was using the same memory"));
    }
  }
}

void SimulatedDevice::FailNextEnqueue(OpKind kind, absl::Status status) {
  absl::MutexLock lock(&mu_);
  fail_next_enqueue_[kind] = std::move(status);
}

void SimulatedDevice::FaultOnRun(OpKind kind, int index, absl::Status status) {
  absl::MutexLock lock(&mu_);
  fault_on_run_[{kind, index}] = std::move(status);
}

void SimulatedDevice::Hold(OpKind kind, int index) {
  absl::MutexLock lock(&mu_);
  held_.insert({kind, index});
}

void SimulatedDevice::Release(OpKind kind, int index) {
  absl::MutexLock lock(&mu_);
  held_.erase({kind, index});
}

void SimulatedDevice::ReleaseAll() {
  absl::MutexLock lock(&mu_);
  held_.clear();
}

bool SimulatedDevice::AwaitStart(OpKind kind, int index,
                                 absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto started = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return started_.count({kind, index}) > 0;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&started), timeout);
}

bool SimulatedDevice::AwaitEnd(OpKind kind, int index, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ended = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ended_.count({kind, index}) > 0;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&ended), timeout);
}

std::vector<SimulatedDevice::OpRecord> SimulatedDevice::timeline() const {
  absl::MutexLock lock(&mu_);
  return timeline_;
}

std::vector<std::string> SimulatedDevice::problems() const {
  absl::MutexLock lock(&mu_);
  return problems_;
}

int64_t SimulatedDevice::allocation_count() const {
  absl::MutexLock lock(&mu_);
  return allocations_;
}

size_t SimulatedDevice::device_bytes_in_use() const {
  absl::MutexLock lock(&mu_);
  return device_in_use_;
}

}  // namespace coalesce
