#include "server/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace coalesce {

absl::Status SharedMemoryManager::Register(const std::string& name,
                                           const std::string& key,
                                           uint64_t offset,
                                           uint64_t byte_size) {
  auto error = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shared memory region '", name, "' (key '", key, "'): ", what));
  };
  if (name.empty()) return absl::InvalidArgumentError("a region needs a name");
  if (byte_size == 0) return error("byte_size must be positive");
  {
    absl::MutexLock lock(&mu_);
    if (regions_.contains(name)) {
      return absl::AlreadyExistsError(absl::StrCat(
          "shared memory region '", name, "' is already registered"));
    }
  }
  const int fd = shm_open(key.c_str(), O_RDWR, 0);
  if (fd < 0) return error(absl::StrCat("cannot open: ", std::strerror(errno)));
  struct stat st {};
  const bool sized = fstat(fd, &st) == 0;
  const uint64_t object_size = sized ? static_cast<uint64_t>(st.st_size) : 0;
  if (!sized || offset > object_size || byte_size > object_size - offset) {
    close(fd);
    return error(absl::StrCat("offset ", offset, " + byte_size ", byte_size,
                              " exceeds the object's ", object_size, " bytes"));
  }
  // mmap wants a page-aligned offset: map from the page holding `offset`.
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t start = offset - offset % page;
  const size_t length = static_cast<size_t>(offset - start + byte_size);
  void* mapped = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                      static_cast<off_t>(start));
  close(fd);
  if (mapped == MAP_FAILED) {
    return error(absl::StrCat("cannot map: ", std::strerror(errno)));
  }
  Region region;
  region.info = {name, key, offset, byte_size};
  region.mapping =
      std::shared_ptr<void>(mapped, [length](void* p) { munmap(p, length); });
  region.base = static_cast<char*>(mapped) + (offset - start);
  absl::MutexLock lock(&mu_);
  if (!regions_.emplace(name, std::move(region)).second) {
    return absl::AlreadyExistsError(absl::StrCat("shared memory region '", name,
                                                 "' is already registered"));
  }
  return absl::OkStatus();
}

void SharedMemoryManager::Unregister(const std::string& name) {
  absl::MutexLock lock(&mu_);
  if (name.empty()) {
    regions_.clear();
  } else {
    regions_.erase(name);
  }
}

absl::StatusOr<std::vector<SharedMemoryRegionInfo>> SharedMemoryManager::Status(
    const std::string& name) const {
  absl::MutexLock lock(&mu_);
  std::vector<SharedMemoryRegionInfo> found;
  for (const auto& [region_name, region] : regions_) {
    if (name.empty() || name == region_name) found.push_back(region.info);
  }
  if (!name.empty() && found.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no shared memory region named '", name, "'"));
  }
  return found;
}

absl::StatusOr<SharedMemorySpan> SharedMemoryManager::Span(
    const std::string& name, uint64_t offset, uint64_t byte_size) const {
  absl::MutexLock lock(&mu_);
  auto it = regions_.find(name);
  if (it == regions_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no shared memory region named '", name, "'"));
  }
  const Region& r = it->second;
  if (offset > r.info.byte_size || byte_size > r.info.byte_size - offset) {
    return absl::InvalidArgumentError(
        absl::StrCat("offset ", offset, " + byte_size ", byte_size,
                     " lies outside shared memory region '", name, "' (",
                     r.info.byte_size, " bytes)"));
  }
  return SharedMemorySpan{
      r.mapping, r.base + offset, static_cast<size_t>(byte_size), {}};
}

bool SharedMemoryManager::Holds(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  return regions_.contains(name);
}

absl::StatusOr<SharedMemorySpan> SharedMemoryManager::TensorSpan(
    const std::string& name, uint64_t offset, uint64_t byte_size) const {
  if (cuda_ == nullptr || Holds(name)) return Span(name, offset, byte_size);
  auto ref = cuda_->Ref(name, offset, byte_size);
  if (!ref.ok()) return ref.status();
  SharedMemorySpan span;
  span.size = ref->size;
  span.device = *std::move(ref);
  return span;
}

}  // namespace coalesce
