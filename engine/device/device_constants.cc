#include "engine/device/device_constants.h"

#include <algorithm>
#include <cstring>

#include "engine/device/status_context.h"
#include "kernels/cuda/half_math.h"

namespace coalesce {
namespace {

// Constants go to the device through a pinned buffer of this size.
constexpr size_t kStagingBytes = size_t{8} << 20;

// The bytes of `constant` in its converted form: reordered to KRSC when it
// has OIHW dims, then float32, float16 or bfloat16 (rounded as the device
// rounds).
std::vector<char> ConvertConstant(
    const LoweredNode::ConvertedConstant& constant) {
  const int64_t count = constant.count;
  std::vector<float> ordered(constant.source, constant.source + count);
  const int64_t* d = constant.oihw;
  if (d[0] > 0 && d[0] * d[1] * d[2] * d[3] == count) {
    for (int64_t o = 0; o < d[0]; ++o)
      for (int64_t i = 0; i < d[1]; ++i)
        for (int64_t h = 0; h < d[2]; ++h)
          for (int64_t w = 0; w < d[3]; ++w)
            ordered[((o * d[2] + h) * d[3] + w) * d[1] + i] =
                constant.source[((o * d[1] + i) * d[2] + h) * d[3] + w];
  }
  std::vector<char> bytes(static_cast<size_t>(count) *
                          DeviceFloatBytes(constant.type));
  if (constant.type == DeviceFloat::kFloat) {
    std::memcpy(bytes.data(), ordered.data(), bytes.size());
    return bytes;
  }
  Half* half = reinterpret_cast<Half*>(bytes.data());
  const bool bfloat16 = constant.type == DeviceFloat::kBFloat16;
  for (int64_t i = 0; i < count; ++i) {
    half[i] = bfloat16 ? kernels::cuda::FloatToBFloat16Bits(ordered[i])
                       : kernels::cuda::FloatToHalfBits(ordered[i]);
  }
  return bytes;
}

}  // namespace

DeviceConstants::DeviceConstants(std::shared_ptr<Device> device)
    : device_(std::move(device)) {}

DeviceConstants::~DeviceConstants() = default;

void DeviceConstants::Begin() {
  new_raw_.clear();
  new_converted_.clear();
}

void DeviceConstants::Commit() { Begin(); }

void DeviceConstants::Rollback() {
  for (const RawKey& key : new_raw_) raw_.erase(key);
  for (const ConvertedKey& key : new_converted_) converted_.erase(key);
  Begin();
}

absl::StatusOr<void*> DeviceConstants::Constant(
    const char* host, size_t bytes, std::shared_ptr<const void> owner) {
  const RawKey key{host, bytes};
  auto it = raw_.find(key);
  if (it == raw_.end()) {
    auto buffer = Upload(host, bytes);
    if (!buffer.ok()) return buffer.status();
    it = raw_.emplace(key, Entry{*std::move(buffer), std::move(owner)}).first;
    new_raw_.push_back(key);
  }
  return it->second.buffer->data();
}

absl::StatusOr<const void*> DeviceConstants::Converted(
    const LoweredNode::ConvertedConstant& constant,
    std::shared_ptr<const void> owner) {
  const ConvertedKey key = constant.Key();
  auto it = converted_.find(key);
  if (it == converted_.end()) {
    const std::vector<char> bytes = ConvertConstant(constant);
    auto buffer = Upload(bytes.data(), std::max<size_t>(bytes.size(), 1));
    if (!buffer.ok()) return buffer.status();
    it = converted_.emplace(key, Entry{*std::move(buffer), std::move(owner)})
             .first;
    new_converted_.push_back(key);
  }
  return it->second.buffer->data();
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> DeviceConstants::Upload(
    const char* host, size_t bytes) {
  if (stream_ == nullptr) {
    auto stream = device_->CreateStream();
    if (!stream.ok()) return stream.status();
    auto event = device_->CreateEvent();
    if (!event.ok()) return event.status();
    auto staging = device_->AllocatePinnedHost(kStagingBytes);
    if (!staging.ok()) return staging.status();
    stream_ = *std::move(stream);
    done_ = *std::move(event);
    staging_ = *std::move(staging);
  }
  auto buffer = device_->AllocateDevice(bytes);
  if (!buffer.ok()) return buffer.status();
  for (size_t done = 0; done < bytes; done += kStagingBytes) {
    const size_t chunk = std::min(kStagingBytes, bytes - done);
    std::memcpy(staging_->data(), host + done, chunk);
    char* dst = static_cast<char*>((*buffer)->data()) + done;
    absl::Status s =
        device_->CopyToDevice(*stream_, dst, staging_->data(), chunk);
    if (s.ok()) s = device_->RecordEvent(*done_, *stream_);
    if (s.ok()) s = device_->SynchronizeEvent(*done_);
    if (!s.ok()) return WithContext(s, "uploading a constant");
  }
  return buffer;
}

size_t DeviceConstants::device_bytes() const {
  absl::MutexLock lock(&mu_);
  size_t bytes = 0;
  for (const auto& [key, entry] : raw_) bytes += entry.buffer->size();
  for (const auto& [key, entry] : converted_) bytes += entry.buffer->size();
  return bytes;
}

}  // namespace coalesce
