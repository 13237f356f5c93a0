// ExternalData: the tensors an ONNX model keeps outside its .onnx file
// (TensorProto.data_location = EXTERNAL, with `location`, `offset` and
// `length` in external_data), read from the model's folder. The PyTorch
// exporter's default (torch.export) writes every model this way: `m.onnx`
// beside `m.onnx.data`.
//
// Files are mapped read-only with mmap, once each, and a tensor is a view
// into its file's mapping; the mapping lives as long as any tensor holds its
// `keep_alive`. So weights are never copied into memory the process owns
// (the page cache holds them, shared with every other process that maps the
// same file), and files over 2 GiB and offsets beyond 2^31 work.
//
// Protections, each refused with InvalidArgument naming the tensor:
//   - `location` (written by whoever made the model file) must be a
//     relative path that stays inside the folder: no absolute path and no
//     ".." component. Symbolic links inside the folder are followed: they
//     are the repository owner's choice (Kubernetes volumes and shared
//     model caches are made of them), not the model file's;
//   - the file must be a regular file holding `offset + length` bytes, and
//     `length` (when given) must be the byte size the tensor's type and
//     shape need;
//   - STRING tensors cannot be external (ONNX stores them as string_data).
// A served model's files must not be truncated in place while it is loaded
// (a mapped page that no longer exists faults): deploy new files by writing
// new ones and renaming, as model repositories are updated anyway.
//
// Thread-safe: Read may be called from several threads; mappings are shared.
#ifndef COALESCE_ENGINE_EXTERNAL_DATA_H_
#define COALESCE_ENGINE_EXTERNAL_DATA_H_

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace onnx {
class TensorProto;
}  // namespace onnx

namespace coalesce {

// Bytes of one external tensor: `data` points into a mapping that
// `keep_alive` keeps mapped.
struct ExternalBytes {
  const char* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> keep_alive;
};

class ExternalData {
 public:
  // `folder`: the model file's folder (in a model repository, the version
  // folder); every location resolves inside it.
  explicit ExternalData(std::filesystem::path folder);

  // The bytes of `proto` (REQUIRES: data_location EXTERNAL) for a tensor of
  // `expected_bytes`. InvalidArgument naming the tensor for a missing or
  // malformed location, a location that escapes the folder, a file that is
  // too short or not a regular file, or a length that does not match;
  // NotFound when the file is missing.
  absl::StatusOr<ExternalBytes> Read(const onnx::TensorProto& proto,
                                     size_t expected_bytes) const;

  const std::filesystem::path& folder() const { return folder_; }

 private:
  struct Location {
    std::string file;
    size_t offset = 0;
    bool has_length = false;
    size_t length = 0;
  };
  class Mapping;

  static absl::StatusOr<Location> ParseLocation(const onnx::TensorProto& proto);
  absl::StatusOr<std::filesystem::path> Resolve(const std::string& file) const;
  absl::StatusOr<std::shared_ptr<const Mapping>> Map(
      const std::filesystem::path& path) const;

  const std::filesystem::path folder_;
  mutable absl::Mutex mu_;
  mutable std::map<std::filesystem::path, std::shared_ptr<const Mapping>>
      mappings_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_EXTERNAL_DATA_H_
