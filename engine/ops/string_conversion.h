// The text forms of numbers that Cast to and from STRING uses. Thread-safe.
//
// Numbers to text (what onnxruntime writes, where it is defined):
//   - integers in plain decimal ("-12", "255"); BOOL as "1" or "0";
//   - FP32 and FP64 in the shortest form that reads back as the same value
//     (std::to_chars: "0.1", "100", "1e+20", "1.5e-07"); FP16 and BF16 as
//     the float they hold; NaN as "NaN" and infinities as "INF" / "-INF".
// Text to numbers: the whole string is one number, optionally after a '+':
//   - integers in decimal, within the target type's range ("3.5", "1e3",
//     " 7" and "300" for UINT8 fail);
//   - floats in C's syntax (decimal or scientific, "inf", "infinity", "nan",
//     any case); beyond the type's range they become infinity or zero; FP16
//     and BF16 parse as a float first;
//   - BOOL: "true" or "false" (any case), or any number (nonzero is true).
// A string that does not parse fails with InvalidArgument quoting it (at
// most 64 bytes of it, escaped) and naming the target type.
#ifndef COALESCE_ENGINE_OPS_STRING_CONVERSION_H_
#define COALESCE_ENGINE_OPS_STRING_CONVERSION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "engine/data_type.h"
#include "engine/string_ref.h"
#include "engine/string_store.h"

namespace coalesce {

// out[i] = the text of src[i], its bytes added to `store`.
// InvalidArgument when `from` is not numeric; ResourceExhausted when the
// store cannot grow.
absl::Status NumbersToStrings(DataType from, const void* src, int64_t count,
                              StringStore& store, StringRef* out);

// dst[i] = src[i] parsed as `to`. InvalidArgument for the first string that
// does not parse (dst then partly written) or when `to` is not numeric.
absl::Status StringsToNumbers(const StringRef* src, int64_t count, DataType to,
                              void* dst);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_OPS_STRING_CONVERSION_H_
