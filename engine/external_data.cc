#include "engine/external_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "onnx/onnx_pb.h"

namespace coalesce {

namespace fs = std::filesystem;

// One file mapped read-only for as long as a tensor views it.
class ExternalData::Mapping {
 public:
  static absl::StatusOr<std::shared_ptr<const Mapping>> Open(
      const fs::path& path) {
    // O_NONBLOCK: a FIFO in its place must not block the loader.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      const int error = errno;
      std::string message =
          absl::StrCat("cannot open external data file '",
                       path.filename().string(), "': ", std::strerror(error));
      return error == ENOENT ? absl::NotFoundError(message)
                             : absl::InvalidArgumentError(message);
    }
    struct stat info;
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      ::close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat("external data '", path.filename().string(),
                       "' is not a regular file"));
    }
    auto mapping = std::shared_ptr<Mapping>(new Mapping());
    mapping->size_ = static_cast<size_t>(info.st_size);
    if (mapping->size_ > 0) {
      void* address =
          ::mmap(nullptr, mapping->size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (address == MAP_FAILED) {
        const int error = errno;
        ::close(fd);
        return absl::ResourceExhaustedError(
            absl::StrCat("cannot map external data '", path.filename().string(),
                         "': ", std::strerror(error)));
      }
      mapping->data_ = static_cast<const char*>(address);
    }
    ::close(fd);  // the mapping stays valid without the descriptor
    return std::shared_ptr<const Mapping>(std::move(mapping));
  }

  ~Mapping() {
    if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  Mapping() = default;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

ExternalData::ExternalData(fs::path folder) : folder_(std::move(folder)) {}

absl::StatusOr<ExternalData::Location> ExternalData::ParseLocation(
    const onnx::TensorProto& proto) {
  Location location;
  bool has_location = false;
  for (const onnx::StringStringEntryProto& entry : proto.external_data()) {
    const std::string& key = entry.key();
    const std::string& value = entry.value();
    uint64_t number = 0;
    if (key == "location") {
      location.file = value;
      has_location = true;
    } else if (key == "offset" || key == "length") {
      if (!absl::SimpleAtoi(value, &number)) {
        return absl::InvalidArgumentError(
            absl::StrCat("external data ", key, " '", value,
                         "' is not a non-negative integer"));
      }
      if (key == "offset") {
        location.offset = number;
      } else {
        location.has_length = true;
        location.length = number;
      }
    }
    // "checksum" and unknown keys are not needed to read the bytes.
  }
  if (!has_location || location.file.empty()) {
    return absl::InvalidArgumentError("external data has no location");
  }
  return location;
}

absl::StatusOr<fs::path> ExternalData::Resolve(const std::string& file) const {
  const fs::path relative(file);
  if (relative.is_absolute() || relative.has_root_name()) {
    return absl::InvalidArgumentError(
        absl::StrCat("external data location '", file,
                     "' is absolute; it must be "
                     "relative to the model's folder"));
  }
  for (const fs::path& part : relative) {
    if (part == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          "external data location '", file, "' leaves the model's folder"));
    }
  }
  return (folder_ / relative).lexically_normal();
}

absl::StatusOr<std::shared_ptr<const ExternalData::Mapping>> ExternalData::Map(
    const fs::path& path) const {
  absl::MutexLock lock(&mu_);
  auto it = mappings_.find(path);
  if (it != mappings_.end()) return it->second;
  auto mapping = Mapping::Open(path);
  if (!mapping.ok()) return mapping.status();
  mappings_[path] = *mapping;
  return *mapping;
}

absl::StatusOr<ExternalBytes> ExternalData::Read(const onnx::TensorProto& proto,
                                                 size_t expected_bytes) const {
  const auto named = [&](const absl::Status& s) {
    return absl::Status(
        s.code(), absl::StrCat("tensor '", proto.name(), "': ", s.message()));
  };
  if (proto.data_type() == onnx::TensorProto::STRING) {
    return named(absl::InvalidArgumentError(
        "a STRING tensor cannot be stored as external data"));
  }
  auto location = ParseLocation(proto);
  if (!location.ok()) return named(location.status());
  if (location->has_length && location->length != expected_bytes) {
    return named(absl::InvalidArgumentError(absl::StrCat(
        "external data length ", location->length, " does not match the ",
        expected_bytes, " bytes its type and shape need")));
  }
  auto path = Resolve(location->file);
  if (!path.ok()) return named(path.status());
  auto mapping = Map(*path);
  if (!mapping.ok()) return named(mapping.status());
  const size_t file_size = (*mapping)->size();
  if (location->offset > file_size ||
      file_size - location->offset < expected_bytes) {
    return named(absl::InvalidArgumentError(
        absl::StrCat("external data '", location->file, "' has ", file_size,
                     " bytes; the tensor needs ", expected_bytes, " at offset ",
                     location->offset)));
  }
  ExternalBytes bytes;
  bytes.data =
      expected_bytes == 0 ? nullptr : (*mapping)->data() + location->offset;
  bytes.size = expected_bytes;
  bytes.keep_alive = *mapping;
  return bytes;
}

}  // namespace coalesce
