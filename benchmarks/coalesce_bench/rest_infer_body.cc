#include "benchmarks/coalesce_bench/rest_infer_body.h"

#include <cctype>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace coalesce::bench {
namespace {

using Json = nlohmann::json;

absl::StatusOr<Json> ParameterJson(const std::string& key,
                                   const inference::InferParameter& p) {
  switch (p.parameter_choice_case()) {
    case inference::InferParameter::kBoolParam:
      return Json(p.bool_param());
    case inference::InferParameter::kInt64Param:
      return Json(p.int64_param());
    case inference::InferParameter::kUint64Param:
      return Json(p.uint64_param());
    case inference::InferParameter::kDoubleParam:
      return Json(p.double_param());
    case inference::InferParameter::kStringParam:
      return Json(p.string_param());
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("parameter '", key, "' has no JSON form"));
  }
}

// Unreserved characters (RFC 3986) stay, everything else is %XX.
std::string PercentEncoded(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<RestInferBody> BuildRestInferBody(
    const inference::ModelInferRequest& request) {
  if (request.raw_input_contents_size() != request.inputs_size()) {
    return absl::InvalidArgumentError(
        "every input must be in raw_input_contents to go as binary data");
  }
  Json header = Json::object();
  if (!request.id().empty()) header["id"] = request.id();
  Json params = Json::object();
  for (const auto& [key, value] : request.parameters()) {
    absl::StatusOr<Json> v = ParameterJson(key, value);
    if (!v.ok()) return v.status();
    params[key] = *std::move(v);
  }
  params["binary_data_output"] = true;
  header["parameters"] = std::move(params);
  Json inputs = Json::array();
  for (int i = 0; i < request.inputs_size(); ++i) {
    const auto& in = request.inputs(i);
    Json shape = Json::array();
    for (int64_t d : in.shape()) shape.push_back(d);
    inputs.push_back(
        {{"name", in.name()},
         {"shape", std::move(shape)},
         {"datatype", in.datatype()},
         {"parameters",
          {{"binary_data_size", request.raw_input_contents(i).size()}}}});
  }
  header["inputs"] = std::move(inputs);
  if (request.outputs_size() > 0) {
    Json outputs = Json::array();
    for (const auto& out : request.outputs()) {
      outputs.push_back(
          {{"name", out.name()}, {"parameters", {{"binary_data", true}}}});
    }
    header["outputs"] = std::move(outputs);
  }
  RestInferBody out;
  out.body = header.dump();
  out.header_length = out.body.size();
  for (const std::string& raw : request.raw_input_contents()) out.body += raw;
  return out;
}

std::string RestModelPath(const std::string& model,
                          const std::string& version) {
  std::string path = absl::StrCat("/v2/models/", PercentEncoded(model));
  if (!version.empty()) {
    absl::StrAppend(&path, "/versions/", PercentEncoded(version));
  }
  return path;
}

}  // namespace coalesce::bench
