#include "server/rest_infer.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/data_type.h"
#include "engine/serialized_bytes.h"
#include "nlohmann/json.hpp"
#include "server/rest_messages.h"

namespace coalesce {
namespace {

using Json = nlohmann::json;

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

absl::Status TensorError(absl::string_view kind, absl::string_view name,
                         absl::string_view what) {
  return Invalid(absl::StrCat(kind, " '", name, "': ", what));
}

// Copies `params` (a JSON object, or absent) into `out`, leaving out the
// HTTP-only keys.
absl::Status CopyParameters(
    const Json& holder, absl::string_view where,
    google::protobuf::Map<std::string, inference::InferParameter>* out) {
  auto it = holder.find("parameters");
  if (it == holder.end()) return absl::OkStatus();
  if (!it->is_object()) {
    return Invalid(absl::StrCat(where, "'parameters' must be an object"));
  }
  for (const auto& [key, value] : it->items()) {
    if (key == "binary_data_size" || key == "binary_data" ||
        key == "binary_data_output")
      continue;
    auto p = InferParameterFromJson(key, value);
    if (!p.ok()) return Invalid(absl::StrCat(where, p.status().message()));
    (*out)[key] = *std::move(p);
  }
  return absl::OkStatus();
}

// The values of a flat or nested JSON array, in row-major order.
void Flatten(const Json& data, std::vector<const Json*>* values) {
  if (!data.is_array()) {
    values->push_back(&data);
    return;
  }
  for (const Json& item : data) Flatten(item, values);
}

template <typename T>
void Append(T value, std::string* raw) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  raw->append(bytes, sizeof(T));
}

template <typename T>
bool AppendInteger(const Json& v, std::string* raw) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
    Append(static_cast<T>(u), raw);
    return true;
  }
  if (!v.is_number_integer()) return false;
  const int64_t i = v.get<int64_t>();
  if constexpr (std::is_unsigned_v<T>) {
    if (i < 0 || static_cast<uint64_t>(i) > std::numeric_limits<T>::max())
      return false;
  } else {
    if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max())
      return false;
  }
  Append(static_cast<T>(i), raw);
  return true;
}

// Appends one JSON value as an element of `type`; false when it is not one.
bool AppendElement(DataType type, const Json& v, std::string* raw) {
  switch (type) {
    case DataType::kBool:
      if (!v.is_boolean()) return false;
      raw->push_back(v.get<bool>() ? 1 : 0);
      return true;
    case DataType::kUint8:
      return AppendInteger<uint8_t>(v, raw);
    case DataType::kUint16:
      return AppendInteger<uint16_t>(v, raw);
    case DataType::kUint32:
      return AppendInteger<uint32_t>(v, raw);
    case DataType::kUint64:
      return AppendInteger<uint64_t>(v, raw);
    case DataType::kInt8:
      return AppendInteger<int8_t>(v, raw);
    case DataType::kInt16:
      return AppendInteger<int16_t>(v, raw);
    case DataType::kInt32:
      return AppendInteger<int32_t>(v, raw);
    case DataType::kInt64:
      return AppendInteger<int64_t>(v, raw);
    case DataType::kFp32:
      if (!v.is_number()) return false;
      Append(v.get<float>(), raw);
      return true;
    case DataType::kFp64:
      if (!v.is_number()) return false;
      Append(v.get<double>(), raw);
      return true;
    case DataType::kBytes: {
      if (!v.is_string()) return false;
      const std::string& s = v.get_ref<const std::string&>();
      char length[kSerializedLengthBytes];
      WriteSerializedLength(static_cast<uint32_t>(s.size()), length);
      raw->append(length, sizeof(length));
      raw->append(s);
      return true;
    }
    default:
      return false;
  }
}

absl::string_view ElementKind(DataType type) {
  switch (type) {
    case DataType::kBool:
      return "JSON booleans";
    case DataType::kFp32:
    case DataType::kFp64:
      return "JSON numbers";
    case DataType::kBytes:
      return "JSON strings";
    default:
      return "JSON integers in the datatype's range";
  }
}

// One input's name, datatype and shape.
absl::Status ReadInputHeader(
    const Json& in, inference::ModelInferRequest::InferInputTensor* input) {
  auto name = in.find("name");
  if (name == in.end() || !name->is_string()) {
    return Invalid("every input needs a 'name' string");
  }
  input->set_name(name->get<std::string>());
  auto datatype = in.find("datatype");
  if (datatype == in.end() || !datatype->is_string()) {
    return TensorError("input", input->name(), "needs a 'datatype' string");
  }
  input->set_datatype(datatype->get<std::string>());
  auto shape = in.find("shape");
  if (shape == in.end() || !shape->is_array()) {
    return TensorError("input", input->name(), "needs a 'shape' array");
  }
  for (const Json& d : *shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      return TensorError("input", input->name(),
                         "shape dims must be non-negative integers");
    }
    input->add_shape(d.get<int64_t>());
  }
  return absl::OkStatus();
}

// The raw bytes of input `input` from its JSON "data".
absl::StatusOr<std::string> JsonData(
    const Json& data,
    const inference::ModelInferRequest::InferInputTensor& input) {
  const DataType type = DataTypeFromName(input.datatype());
  if (type == DataType::kInvalid) {
    return TensorError(
        "input", input.name(),
        absl::StrCat("unknown datatype '", input.datatype(), "'"));
  }
  if (type == DataType::kFp16 || type == DataType::kBf16) {
    return TensorError(
        "input", input.name(),
        absl::StrCat(input.datatype(),
                     " values cannot be written in JSON; send them as "
                     "binary data (parameter 'binary_data_size')"));
  }
  std::vector<const Json*> values;
  Flatten(data, &values);
  uint64_t count = 1;
  for (int64_t d : input.shape()) count *= static_cast<uint64_t>(d);
  if (values.size() != count) {
    return TensorError("input", input.name(),
                       absl::StrCat(values.size(), " values for shape with ",
                                    count, " elements"));
  }
  std::string raw;
  raw.reserve(values.size() * std::max<size_t>(ElementByteSize(type), 1));
  for (size_t i = 0; i < values.size(); ++i) {
    if (!AppendElement(type, *values[i], &raw)) {
      return TensorError(
          "input", input.name(),
          absl::StrCat("value ", i, " is not a ", input.datatype(), " value (",
                       ElementKind(type), ")"));
    }
  }
  return raw;
}

// Reads input `in` into the request: parameters, and its bytes from JSON,
// from the binary data at *binary_used, or (shared memory) none.
absl::Status ReadInput(const Json& in, std::string_view binary,
                       size_t* binary_used, RestInferRequest* request) {
  if (!in.is_object()) return Invalid("every input must be an object");
  auto* input = request->proto.add_inputs();
  if (absl::Status s = ReadInputHeader(in, input); !s.ok()) return s;
  const std::string where = absl::StrCat("input '", input->name(), "': ");
  if (absl::Status s = CopyParameters(in, where, input->mutable_parameters());
      !s.ok())
    return s;
  const bool in_shm = input->parameters().contains("shared_memory_region");
  const auto data = in.find("data");
  const Json* params = in.contains("parameters") ? &in["parameters"] : nullptr;
  const bool binary_input = params != nullptr && params->is_object() &&
                            params->contains("binary_data_size");
  if (in_shm + binary_input + (data != in.end()) != 1) {
    return TensorError(
        "input", input->name(),
        "needs exactly one of 'data', parameter 'binary_data_size' and "
        "parameter 'shared_memory_region'");
  }
  if (in_shm) return absl::OkStatus();
  if (data != in.end()) {
    auto raw = JsonData(*data, *input);
    if (!raw.ok()) return raw.status();
    *request->proto.add_raw_input_contents() = *std::move(raw);
    return absl::OkStatus();
  }
  const Json& size = (*params)["binary_data_size"];
  if (!size.is_number_integer() || size.get<int64_t>() < 0) {
    return TensorError("input", input->name(),
                       "'binary_data_size' must be a non-negative integer");
  }
  const uint64_t bytes = size.get<uint64_t>();
  if (bytes > binary.size() - *binary_used) {
    return TensorError(
        "input", input->name(),
        absl::StrCat("binary_data_size ", bytes, " is past the end of the ",
                     binary.size(), " bytes of binary data"));
  }
  request->proto.add_raw_input_contents(
      std::string(binary.substr(*binary_used, bytes)));
  *binary_used += bytes;
  return absl::OkStatus();
}

absl::Status ReadOutput(const Json& out, RestInferRequest* request) {
  if (!out.is_object()) return Invalid("every output must be an object");
  auto name = out.find("name");
  if (name == out.end() || !name->is_string()) {
    return Invalid("every requested output needs a 'name' string");
  }
  auto* output = request->proto.add_outputs();
  output->set_name(name->get<std::string>());
  const std::string where = absl::StrCat("output '", output->name(), "': ");
  if (absl::Status s = CopyParameters(out, where, output->mutable_parameters());
      !s.ok())
    return s;
  auto params = out.find("parameters");
  if (params != out.end() && params->contains("binary_data")) {
    const Json& binary = (*params)["binary_data"];
    if (!binary.is_boolean()) {
      return TensorError("output", output->name(),
                         "'binary_data' must be a bool");
    }
    request->binary_outputs[output->name()] = binary.get<bool>();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RestInferRequest> ParseRestInfer(
    std::string_view body, std::optional<size_t> header_length,
    std::string_view model, std::string_view version) {
  if (header_length.has_value() && *header_length > body.size()) {
    return Invalid(absl::StrCat("Inference-Header-Content-Length ",
                                *header_length, " is past the body's ",
                                body.size(), " bytes"));
  }
  const std::string_view header =
      header_length.has_value() ? body.substr(0, *header_length) : body;
  const std::string_view binary =
      header_length.has_value() ? body.substr(*header_length) : "";
  const Json json = Json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return Invalid("the request body is not a JSON object");
  }
  RestInferRequest request;
  request.proto.set_model_name(std::string(model));
  request.proto.set_model_version(std::string(version));
  if (auto id = json.find("id"); id != json.end()) {
    if (!id->is_string()) return Invalid("'id' must be a string");
    request.proto.set_id(id->get<std::string>());
  }
  if (absl::Status s =
          CopyParameters(json, "", request.proto.mutable_parameters());
      !s.ok())
    return s;
  if (auto params = json.find("parameters");
      params != json.end() && params->contains("binary_data_output")) {
    const Json& all = (*params)["binary_data_output"];
    if (!all.is_boolean()) {
      return Invalid("parameter 'binary_data_output' must be a bool");
    }
    request.binary_by_default = all.get<bool>();
  }
  auto inputs = json.find("inputs");
  if (inputs == json.end() || !inputs->is_array()) {
    return Invalid("the request needs an 'inputs' array");
  }
  size_t binary_used = 0;
  for (const Json& in : *inputs) {
    if (absl::Status s = ReadInput(in, binary, &binary_used, &request); !s.ok())
      return s;
  }
  if (binary_used != binary.size()) {
    return Invalid(absl::StrCat(binary.size(),
                                " bytes of binary data, but the inputs' "
                                "binary_data_size add up to ",
                                binary_used));
  }
  if (auto outputs = json.find("outputs"); outputs != json.end()) {
    if (!outputs->is_array()) return Invalid("'outputs' must be an array");
    for (const Json& out : *outputs) {
      if (absl::Status s = ReadOutput(out, &request); !s.ok()) return s;
    }
  }
  return request;
}

namespace {

template <typename T>
T Load(const char* at) {
  T v;
  std::memcpy(&v, at, sizeof(T));
  return v;
}

// The JSON values of one output's raw bytes.
absl::StatusOr<Json> JsonValues(DataType type, std::string_view raw,
                                uint64_t count, absl::string_view name) {
  Json values = Json::array();
  if (type == DataType::kBytes) {
    size_t at = 0;
    for (uint64_t i = 0; i < count; ++i) {
      if (raw.size() - at < kSerializedLengthBytes) break;
      const uint32_t length = ReadSerializedLength(raw.data() + at);
      at += kSerializedLengthBytes;
      if (raw.size() - at < length) break;
      values.push_back(std::string(raw.substr(at, length)));
      at += length;
    }
    if (values.size() != count || at != raw.size()) {
      return absl::InternalError(absl::StrCat(
          "output '", name, "': its bytes do not hold ", count, " strings"));
    }
    return values;
  }
  const size_t width = ElementByteSize(type);
  if (width == 0 || raw.size() != count * width) {
    return absl::InternalError(absl::StrCat("output '", name, "': ", raw.size(),
                                            " bytes for ", count, " elements"));
  }
  for (uint64_t i = 0; i < count; ++i) {
    const char* at = raw.data() + i * width;
    switch (type) {
      case DataType::kBool:
        values.push_back(*at != 0);
        break;
      case DataType::kUint8:
        values.push_back(Load<uint8_t>(at));
        break;
      case DataType::kUint16:
        values.push_back(Load<uint16_t>(at));
        break;
      case DataType::kUint32:
        values.push_back(Load<uint32_t>(at));
        break;
      case DataType::kUint64:
        values.push_back(Load<uint64_t>(at));
        break;
      case DataType::kInt8:
        values.push_back(Load<int8_t>(at));
        break;
      case DataType::kInt16:
        values.push_back(Load<int16_t>(at));
        break;
      case DataType::kInt32:
        values.push_back(Load<int32_t>(at));
        break;
      case DataType::kInt64:
        values.push_back(Load<int64_t>(at));
        break;
      case DataType::kFp32:
        values.push_back(Load<float>(at));
        break;
      case DataType::kFp64:
        values.push_back(Load<double>(at));
        break;
      default:
        return absl::InternalError(
            absl::StrCat("output '", name, "': no JSON form for its datatype"));
    }
  }
  return values;
}

// The request's output `name`, or null when it asked for every output.
const inference::ModelInferRequest::InferRequestedOutputTensor* Requested(
    const inference::ModelInferRequest& request, const std::string& name) {
  for (const auto& output : request.outputs())
    if (output.name() == name) return &output;
  return nullptr;
}

Json ParameterJson(const inference::InferParameter& p) {
  switch (p.parameter_choice_case()) {
    case inference::InferParameter::kBoolParam:
      return p.bool_param();
    case inference::InferParameter::kInt64Param:
      return p.int64_param();
    case inference::InferParameter::kUint64Param:
      return p.uint64_param();
    case inference::InferParameter::kDoubleParam:
      return p.double_param();
    case inference::InferParameter::kStringParam:
      return p.string_param();
    default:
      return nullptr;
  }
}

}  // namespace

absl::StatusOr<RestInferResponse> FormatRestInfer(
    const inference::ModelInferResponse& response,
    const RestInferRequest& request) {
  RestInferResponse out;
  Json json = Json::object();
  json["model_name"] = response.model_name();
  json["model_version"] = response.model_version();
  if (!response.id().empty()) json["id"] = response.id();
  Json outputs = Json::array();
  for (int i = 0; i < response.outputs_size(); ++i) {
    const auto& output = response.outputs(i);
    Json o = {{"name", output.name()}, {"datatype", output.datatype()}};
    Json shape = Json::array();
    uint64_t count = 1;
    for (int64_t d : output.shape()) {
      shape.push_back(d);
      count *= static_cast<uint64_t>(d);
    }
    o["shape"] = std::move(shape);
    const auto* asked = Requested(request.proto, output.name());
    const std::string_view raw = i < response.raw_output_contents_size()
                                     ? response.raw_output_contents(i)
                                     : std::string_view();
    const DataType type = DataTypeFromName(output.datatype());
    if (asked != nullptr &&
        asked->parameters().contains("shared_memory_region")) {
      Json params = Json::object();
      for (const auto& [key, value] : asked->parameters())
        if (key.starts_with("shared_memory_"))
          params[key] = ParameterJson(value);
      o["parameters"] = std::move(params);
    } else {
      auto it = request.binary_outputs.find(output.name());
      const bool binary =
          (it != request.binary_outputs.end() ? it->second
                                              : request.binary_by_default) ||
          type == DataType::kFp16 || type == DataType::kBf16;
      if (binary) {
        o["parameters"] = {{"binary_data_size", raw.size()}};
        out.binary.append(raw);
      } else {
        auto values = JsonValues(type, raw, count, output.name());
        if (!values.ok()) return values.status();
        o["data"] = *std::move(values);
      }
    }
    outputs.push_back(std::move(o));
  }
  json["outputs"] = std::move(outputs);
  out.json = json.dump(-1, ' ', false, Json::error_handler_t::replace);
  return out;
}

}  // namespace coalesce
