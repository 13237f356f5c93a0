#include "server/infer_request_decoder.h"

#include <chrono>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace coalesce {
namespace {

using inference::InferParameter;
using inference::InferTensorContents;
using Input = inference::ModelInferRequest::InferInputTensor;

absl::Status InputError(const std::string& name, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("input '", name, "': ", what));
}

template <typename T>
std::string_view ViewOf(const google::protobuf::RepeatedField<T>& field) {
  return std::string_view(reinterpret_cast<const char*>(field.data()),
                          field.size() * sizeof(T));
}

// Narrows 32-bit typed contents into `Narrow` elements.
template <typename Narrow, typename Wide>
std::string_view Converted(const google::protobuf::RepeatedField<Wide>& field,
                           std::deque<std::string>* converted) {
  std::string& out =
      converted->emplace_back(field.size() * sizeof(Narrow), '\0');
  for (int i = 0; i < field.size(); ++i) {
    const auto value = static_cast<Narrow>(field.Get(i));
    std::memcpy(out.data() + i * sizeof(Narrow), &value, sizeof(Narrow));
  }
  return out;
}

std::string_view SerializedBytes(const InferTensorContents& contents,
                                 std::deque<std::string>* converted) {
  std::string& out = converted->emplace_back();
  for (const std::string& element : contents.bytes_contents()) {
    const uint32_t length = static_cast<uint32_t>(element.size());
    out.append(reinterpret_cast<const char*>(&length), sizeof(length));
    out.append(element);
  }
  return out;
}

// Number of typed values present, over every typed field.
int TypedValueCount(const InferTensorContents& c) {
  return c.bool_contents_size() + c.int_contents_size() +
         c.int64_contents_size() + c.uint_contents_size() +
         c.uint64_contents_size() + c.fp32_contents_size() +
         c.fp64_contents_size() + c.bytes_contents_size();
}

// Where each datatype's typed contents live: the view (or conversion) of the
// field as raw tensor bytes, and how many values the field holds.
struct TypedField {
  DataType type;
  std::string_view (*bytes)(const InferTensorContents&,
                            std::deque<std::string>*);
  int (*count)(const InferTensorContents&);
};

using C = InferTensorContents;
using Buffers = std::deque<std::string>;
constexpr TypedField kTypedFields[] = {
    {DataType::kBool,
     [](const C& c, Buffers*) { return ViewOf(c.bool_contents()); },
     [](const C& c) { return c.bool_contents_size(); }},
    {DataType::kInt8,
     [](const C& c, Buffers* b) {
       return Converted<int8_t>(c.int_contents(), b);
     },
     [](const C& c) { return c.int_contents_size(); }},
    {DataType::kInt16,
     [](const C& c, Buffers* b) {
       return Converted<int16_t>(c.int_contents(), b);
     },
     [](const C& c) { return c.int_contents_size(); }},
    {DataType::kInt32,
     [](const C& c, Buffers*) { return ViewOf(c.int_contents()); },
     [](const C& c) { return c.int_contents_size(); }},
    {DataType::kInt64,
     [](const C& c, Buffers*) { return ViewOf(c.int64_contents()); },
     [](const C& c) { return c.int64_contents_size(); }},
    {DataType::kUint8,
     [](const C& c, Buffers* b) {
       return Converted<uint8_t>(c.uint_contents(), b);
     },
     [](const C& c) { return c.uint_contents_size(); }},
    {DataType::kUint16,
     [](const C& c, Buffers* b) {
       return Converted<uint16_t>(c.uint_contents(), b);
     },
     [](const C& c) { return c.uint_contents_size(); }},
    {DataType::kUint32,
     [](const C& c, Buffers*) { return ViewOf(c.uint_contents()); },
     [](const C& c) { return c.uint_contents_size(); }},
    {DataType::kUint64,
     [](const C& c, Buffers*) { return ViewOf(c.uint64_contents()); },
     [](const C& c) { return c.uint64_contents_size(); }},
    {DataType::kFp32,
     [](const C& c, Buffers*) { return ViewOf(c.fp32_contents()); },
     [](const C& c) { return c.fp32_contents_size(); }},
    {DataType::kFp64,
     [](const C& c, Buffers*) { return ViewOf(c.fp64_contents()); },
     [](const C& c) { return c.fp64_contents_size(); }},
    {DataType::kBytes,
     [](const C& c, Buffers* b) { return SerializedBytes(c, b); },
     [](const C& c) { return c.bytes_contents_size(); }},
};

// The typed field that holds `type`, as bytes laid out like a raw tensor.
absl::StatusOr<std::string_view> TypedData(const Input& input, DataType type,
                                           std::deque<std::string>* converted) {
  const InferTensorContents& c = input.contents();
  for (const TypedField& field : kTypedFields) {
    if (field.type != type) continue;
    if (field.count(c) != TypedValueCount(c)) {
      return InputError(
          input.name(),
          absl::StrCat("typed contents are not in the field for datatype ",
                       std::string(DataTypeName(type))));
    }
    return field.bytes(c, converted);
  }
  return InputError(input.name(),
                    absl::StrCat(std::string(DataTypeName(type)),
                                 " has no typed contents field; send it in "
                                 "raw_input_contents"));
}

// Input `index`; `raw` is its raw_input_contents entry (null when the
// request has none), `shm` its span of a shared memory region (null when
// it is not in one).
absl::StatusOr<RequestInput> DecodeInput(
    const inference::ModelInferRequest& proto, int index,
    const std::string* raw, const SharedMemorySpan* shm,
    std::deque<std::string>* converted) {
  const Input& input = proto.inputs(index);
  RequestInput decoded;
  decoded.name = input.name();
  decoded.dtype = DataTypeFromName(input.datatype());
  if (decoded.dtype == DataType::kInvalid) {
    return InputError(input.name(), absl::StrCat("unknown datatype '",
                                                 input.datatype(), "'"));
  }
  for (int64_t d : input.shape()) {
    if (d < 0)
      return InputError(input.name(), "shape has a negative dimension");
    decoded.shape.push_back(d);
  }
  const bool has_typed =
      input.has_contents() && TypedValueCount(input.contents()) > 0;
  if (shm != nullptr) {
    if (has_typed) {
      return InputError(input.name(),
                        "in shared memory and in typed contents at once");
    }
    if (!shm->device) {
      decoded.data = std::string_view(shm->data, shm->size);
    } else if (decoded.dtype != DataType::kBytes) {
      decoded.device = shm->device;  // zero copy where the instance can
    } else {
      // BYTES are parsed on the host (validation, string kernels).
      std::string& host = converted->emplace_back(shm->size, '\0');
      if (absl::Status s = shm->device.Read(host.data()); !s.ok()) {
        return InputError(
            input.name(),
            absl::StrCat("reading CUDA shared memory: ", s.message()));
      }
      decoded.data = host;
    }
    return decoded;
  }
  if (raw != nullptr) {
    if (has_typed) {
      return InputError(input.name(),
                        "raw_input_contents and typed contents in one request");
    }
    decoded.data = *raw;
    return decoded;
  }
  auto data = TypedData(input, decoded.dtype, converted);
  if (!data.ok()) return data.status();
  decoded.data = *data;
  return decoded;
}

// `sequence_id` (int64, uint64 or string), `sequence_start` and
// `sequence_end` (bool), as tritonclient sends them.
absl::Status ReadSequenceParameter(const std::string& key,
                                   const inference::InferParameter& value,
                                   InferenceRequest* request) {
  SequenceFlags& flags =
      request->sequence ? *request->sequence : request->sequence.emplace();
  if (key != "sequence_id") {
    if (!value.has_bool_param()) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter '", key, "' must be a bool"));
    }
    (key == "sequence_start" ? flags.start : flags.end) = value.bool_param();
    return absl::OkStatus();
  }
  if (value.has_string_param()) {
    flags.id = value.string_param();
  } else if (value.has_uint64_param()) {
    flags.id = value.uint64_param();
  } else if (value.has_int64_param() && value.int64_param() >= 0) {
    flags.id = static_cast<uint64_t>(value.int64_param());
  } else {
    return absl::InvalidArgumentError(
        "parameter 'sequence_id' must be a non-negative integer or a string");
  }
  return absl::OkStatus();
}

absl::Status ReadParameters(const inference::ModelInferRequest& proto,
                            InferenceRequest* request) {
  for (const auto& [key, value] : proto.parameters()) {
    if (key == "priority") {
      if (value.has_uint64_param()) {
        request->priority = value.uint64_param();
      } else if (value.has_int64_param() && value.int64_param() >= 0) {
        request->priority = static_cast<uint64_t>(value.int64_param());
      } else {
        return absl::InvalidArgumentError(
            "parameter 'priority' must be a non-negative integer");
      }
    } else if (key == "sequence_id" || key == "sequence_start" ||
               key == "sequence_end") {
      if (absl::Status s = ReadSequenceParameter(key, value, request);
          !s.ok()) {
        return s;
      }
    } else if (key.starts_with("triton_") &&
               key != "triton_enable_empty_final_response") {
      // Triton reserves the prefix and refuses its unknown keys.
      return absl::InvalidArgumentError(
          absl::StrCat("parameter '", key,
                       "' is reserved: 'triton_' parameters are Triton's own"));
    } else if (key == "timeout") {
      if (!value.has_int64_param() || value.int64_param() < 0) {
        return absl::InvalidArgumentError(
            "parameter 'timeout' must be a non-negative int64 (microseconds)");
      }
      if (value.int64_param() > 0) {
        request->timeout = std::chrono::microseconds(value.int64_param());
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<SharedMemoryRef>> SharedMemoryRefOf(
    const google::protobuf::Map<std::string, inference::InferParameter>& params,
    const std::string& kind, const std::string& name) {
  auto region = params.find("shared_memory_region");
  if (region == params.end()) return std::nullopt;
  auto error = [&](const char* what) {
    return absl::InvalidArgumentError(
        absl::StrCat(kind, " '", name, "': ", what));
  };
  auto int_param = [&](const char* key, bool required,
                       uint64_t* out) -> absl::Status {
    auto it = params.find(key);
    if (it == params.end()) {
      return required ? error("shared_memory_byte_size is required")
                      : absl::OkStatus();
    }
    if (it->second.has_int64_param() && it->second.int64_param() >= 0) {
      *out = static_cast<uint64_t>(it->second.int64_param());
    } else if (it->second.has_uint64_param()) {
      *out = it->second.uint64_param();
    } else {
      return error(
          "shared memory offsets and sizes must be non-negative "
          "integers");
    }
    return absl::OkStatus();
  };
  if (!region->second.has_string_param()) {
    return error("shared_memory_region must be a string");
  }
  SharedMemoryRef ref;
  ref.region = region->second.string_param();
  if (absl::Status s =
          int_param("shared_memory_byte_size", true, &ref.byte_size);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = int_param("shared_memory_offset", false, &ref.offset);
      !s.ok()) {
    return s;
  }
  return ref;
}

absl::Status DecodeInferRequest(const inference::ModelInferRequest& proto,
                                std::deque<std::string>* converted,
                                InferenceRequest* request,
                                const SharedMemoryManager* shared_memory,
                                std::vector<SharedMemorySpan>* spans) {
  // Which inputs live in shared memory; the others take the raw contents
  // in order.
  std::vector<std::optional<SharedMemorySpan>> shm(proto.inputs_size());
  int in_messages = 0;
  for (int i = 0; i < proto.inputs_size(); ++i) {
    const Input& input = proto.inputs(i);
    auto ref = SharedMemoryRefOf(input.parameters(), "input", input.name());
    if (!ref.ok()) return ref.status();
    if (!ref->has_value()) {
      ++in_messages;
      continue;
    }
    if (shared_memory == nullptr) {
      return InputError(input.name(), "shared memory is not available here");
    }
    auto span = shared_memory->TensorSpan((*ref)->region, (*ref)->offset,
                                          (*ref)->byte_size);
    if (!span.ok())
      return InputError(input.name(), std::string(span.status().message()));
    shm[i] = *span;
    if (spans != nullptr) spans->push_back(*span);
  }
  if (proto.raw_input_contents_size() > 0 &&
      proto.raw_input_contents_size() != in_messages) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request has ", in_messages, " inputs outside shared memory but ",
        proto.raw_input_contents_size(),
        " raw_input_contents; each needs exactly one"));
  }
  request->id = proto.id();
  int raw_index = 0;
  for (int i = 0; i < proto.inputs_size(); ++i) {
    const std::string* raw = nullptr;
    if (!shm[i] && proto.raw_input_contents_size() > 0) {
      raw = &proto.raw_input_contents(raw_index++);
    }
    auto input =
        DecodeInput(proto, i, raw, shm[i] ? &*shm[i] : nullptr, converted);
    if (!input.ok()) return input.status();
    request->inputs.push_back(*std::move(input));
  }
  for (const auto& output : proto.outputs()) {
    request->requested_outputs.push_back(output.name());
  }
  return ReadParameters(proto, request);
}

}  // namespace coalesce
