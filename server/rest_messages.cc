#include "server/rest_messages.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"

namespace coalesce {
namespace {

using Json = nlohmann::json;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

void NumbersIn(const Descriptor* type, Json* object);

// One value of field `f`: a 64-bit integer the mapping wrote as a string
// becomes a number; a message is walked.
void NumberFor(const FieldDescriptor* f, Json* value) {
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    NumbersIn(f->message_type(), value);
    return;
  }
  if (!value->is_string()) return;
  const std::string& text = value->get_ref<const std::string&>();
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
    int64_t n = 0;
    if (absl::SimpleAtoi(text, &n)) *value = n;
  } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64) {
    uint64_t n = 0;
    if (absl::SimpleAtoi(text, &n)) *value = n;
  }
}

void NumbersIn(const Descriptor* type, Json* object) {
  if (!object->is_object()) return;
  for (auto it = object->begin(); it != object->end(); ++it) {
    const FieldDescriptor* f = type->FindFieldByName(it.key());
    if (f == nullptr) continue;
    Json& value = it.value();
    if (f->is_map()) {
      const FieldDescriptor* mapped = f->message_type()->map_value();
      for (auto& item : value) NumberFor(mapped, &item);
    } else if (f->is_repeated()) {
      for (auto& item : value) NumberFor(f, &item);
    } else {
      NumberFor(f, &value);
    }
  }
}

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

// The body as a JSON object; an empty body is an empty object.
absl::StatusOr<Json> ObjectOf(std::string_view body, absl::string_view what) {
  if (body.empty()) return Json::object();
  Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return Invalid(absl::StrCat("the ", what, " body is not valid JSON"));
  }
  if (!json.is_object()) {
    return Invalid(absl::StrCat("the ", what, " body must be a JSON object"));
  }
  return json;
}

// The "parameters" object of a repository request, or an empty one.
absl::StatusOr<Json> ParametersOf(const Json& json, absl::string_view what) {
  auto it = json.find("parameters");
  if (it == json.end()) return Json::object();
  if (!it->is_object()) {
    return Invalid(
        absl::StrCat("the ", what, " body's 'parameters' must be an object"));
  }
  return *it;
}

// An unsigned integer field (absent: 0).
absl::StatusOr<uint64_t> UnsignedField(const Json& json, const char* name,
                                       absl::string_view what) {
  auto it = json.find(name);
  if (it == json.end()) return uint64_t{0};
  if (!it->is_number_unsigned()) {
    return Invalid(absl::StrCat("the ", what, " body's '", name,
                                "' must be an unsigned integer"));
  }
  return it->get<uint64_t>();
}

// The "parameters" of a load or unload body. "file:<path>" values are the
// file's contents in base64, as Triton's HTTP frontend takes them.
absl::Status RepositoryParameters(
    std::string_view body, absl::string_view what,
    google::protobuf::Map<std::string, inference::ModelRepositoryParameter>*
        out) {
  auto json = ObjectOf(body, what);
  if (!json.ok()) return json.status();
  auto params = ParametersOf(*json, what);
  if (!params.ok()) return params.status();
  for (const auto& [key, value] : params->items()) {
    inference::ModelRepositoryParameter& p = (*out)[key];
    if (key.starts_with("file:")) {
      std::string bytes;
      if (!value.is_string() ||
          !absl::Base64Unescape(value.get<std::string>(), &bytes)) {
        return Invalid(absl::StrCat(what, " parameter '", key,
                                    "' must be the file's contents in base64"));
      }
      p.set_bytes_param(std::move(bytes));
    } else if (value.is_boolean()) {
      p.set_bool_param(value.get<bool>());
    } else if (value.is_number_integer()) {
      p.set_int64_param(value.get<int64_t>());
    } else if (value.is_string()) {
      p.set_string_param(value.get<std::string>());
    } else {
      return Invalid(absl::StrCat(what, " parameter '", key,
                                  "' must be a bool, an integer or a string"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

Json ProtoJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string text;
  if (!google::protobuf::util::MessageToJsonString(message, &text, options)
           .ok()) {
    return Json::object();
  }
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Json::object();
  NumbersIn(message.GetDescriptor(), &json);
  return json;
}

absl::StatusOr<inference::InferParameter> InferParameterFromJson(
    std::string_view key, const Json& value) {
  inference::InferParameter p;
  if (value.is_boolean()) {
    p.set_bool_param(value.get<bool>());
  } else if (value.is_number_unsigned() &&
             value.get<uint64_t>() >
                 static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    p.set_uint64_param(value.get<uint64_t>());
  } else if (value.is_number_integer()) {
    p.set_int64_param(value.get<int64_t>());
  } else if (value.is_number_float()) {
    p.set_double_param(value.get<double>());
  } else if (value.is_string()) {
    p.set_string_param(value.get<std::string>());
  } else {
    return Invalid(absl::StrCat("parameter '", std::string(key),
                                "' must be a bool, a number or a string"));
  }
  return p;
}

absl::StatusOr<inference::RepositoryIndexRequest> ParseIndexBody(
    std::string_view body) {
  auto json = ObjectOf(body, "repository index");
  if (!json.ok()) return json.status();
  inference::RepositoryIndexRequest req;
  auto it = json->find("ready");
  if (it != json->end()) {
    if (!it->is_boolean()) {
      return Invalid("the repository index body's 'ready' must be a bool");
    }
    req.set_ready(it->get<bool>());
  }
  return req;
}

absl::StatusOr<inference::RepositoryModelLoadRequest> ParseLoadBody(
    std::string_view model, std::string_view body) {
  inference::RepositoryModelLoadRequest req;
  req.set_model_name(std::string(model));
  if (absl::Status s =
          RepositoryParameters(body, "model load", req.mutable_parameters());
      !s.ok()) {
    return s;
  }
  return req;
}

absl::StatusOr<inference::RepositoryModelUnloadRequest> ParseUnloadBody(
    std::string_view model, std::string_view body) {
  inference::RepositoryModelUnloadRequest req;
  req.set_model_name(std::string(model));
  if (absl::Status s =
          RepositoryParameters(body, "model unload", req.mutable_parameters());
      !s.ok()) {
    return s;
  }
  return req;
}

absl::StatusOr<inference::SystemSharedMemoryRegisterRequest>
ParseSystemRegisterBody(std::string_view name, std::string_view body) {
  constexpr absl::string_view kWhat = "shared memory register";
  auto json = ObjectOf(body, kWhat);
  if (!json.ok()) return json.status();
  inference::SystemSharedMemoryRegisterRequest req;
  req.set_name(std::string(name));
  auto key = json->find("key");
  if (key == json->end() || !key->is_string()) {
    return Invalid("the shared memory register body needs 'key', a string");
  }
  req.set_key(key->get<std::string>());
  auto offset = UnsignedField(*json, "offset", kWhat);
  if (!offset.ok()) return offset.status();
  req.set_offset(*offset);
  auto size = UnsignedField(*json, "byte_size", kWhat);
  if (!size.ok()) return size.status();
  req.set_byte_size(*size);
  return req;
}

absl::StatusOr<inference::CudaSharedMemoryRegisterRequest>
ParseCudaRegisterBody(std::string_view name, std::string_view body) {
  constexpr absl::string_view kWhat = "CUDA shared memory register";
  auto json = ObjectOf(body, kWhat);
  if (!json.ok()) return json.status();
  inference::CudaSharedMemoryRegisterRequest req;
  req.set_name(std::string(name));
  auto handle = json->find("raw_handle");
  std::string raw;
  if (handle == json->end() || !handle->is_object() ||
      !handle->contains("b64") || !(*handle)["b64"].is_string() ||
      !absl::Base64Unescape((*handle)["b64"].get<std::string>(), &raw)) {
    return Invalid(
        "the CUDA shared memory register body needs 'raw_handle': "
        "{\"b64\": <the cudaIpcMemHandle_t in base64>}");
  }
  req.set_raw_handle(std::move(raw));
  auto device = json->find("device_id");
  if (device != json->end()) {
    if (!device->is_number_integer() || device->get<int64_t>() < 0) {
      return Invalid(
          "the CUDA shared memory register body's 'device_id' must be an "
          "unsigned integer");
    }
    req.set_device_id(device->get<int64_t>());
  }
  auto size = UnsignedField(*json, "byte_size", kWhat);
  if (!size.ok()) return size.status();
  req.set_byte_size(*size);
  return req;
}

}  // namespace coalesce
