// WithContext: a status with "what: " before its message, same code, and
// every payload kept (a device marks sticky faults with a payload, which
// Device::IsSticky must still find after the message is extended).
#ifndef COALESCE_ENGINE_DEVICE_STATUS_CONTEXT_H_
#define COALESCE_ENGINE_DEVICE_STATUS_CONTEXT_H_

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace coalesce {

inline absl::Status WithContext(const absl::Status& status,
                                absl::string_view what) {
  if (status.ok()) return status;
  absl::Status out(status.code(), absl::StrCat(what, ": ", status.message()));
  status.ForEachPayload([&out](absl::string_view url, const absl::Cord& value) {
    out.SetPayload(url, value);
  });
  return out;
}

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_STATUS_CONTEXT_H_
