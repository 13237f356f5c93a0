#include "server/classification.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "engine/data_type.h"

namespace coalesce {
namespace {

// One row's scores as doubles (for ordering) and as printed.
struct Scores {
  std::vector<double> value;
  std::vector<std::string> text;
};

template <typename T>
void ReadRow(const char* data, int64_t count, Scores* out) {
  for (int64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, data + i * sizeof(T), sizeof(T));
    out->value.push_back(static_cast<double>(v));
    if constexpr (std::is_same_v<T, bool>) {
      out->text.push_back(v ? "1" : "0");
    } else {
      out->text.push_back(std::to_string(v));
    }
  }
}

absl::StatusOr<Scores> RowScores(DataType type, const char* data,
                                 int64_t count) {
  Scores s;
  switch (type) {
    case DataType::kFp32:
      ReadRow<float>(data, count, &s);
      break;
    case DataType::kFp64:
      ReadRow<double>(data, count, &s);
      break;
    case DataType::kInt8:
      ReadRow<int8_t>(data, count, &s);
      break;
    case DataType::kInt16:
      ReadRow<int16_t>(data, count, &s);
      break;
    case DataType::kInt32:
      ReadRow<int32_t>(data, count, &s);
      break;
    case DataType::kInt64:
      ReadRow<int64_t>(data, count, &s);
      break;
    case DataType::kUint8:
      ReadRow<uint8_t>(data, count, &s);
      break;
    case DataType::kUint16:
      ReadRow<uint16_t>(data, count, &s);
      break;
    case DataType::kUint32:
      ReadRow<uint32_t>(data, count, &s);
      break;
    case DataType::kUint64:
      ReadRow<uint64_t>(data, count, &s);
      break;
    case DataType::kBool:
      ReadRow<bool>(data, count, &s);
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("classification needs a numeric output, not ",
                       std::string(DataTypeName(type))));
  }
  return s;
}

void AppendBytesElement(const std::string& element, std::string* out) {
  const uint32_t length = static_cast<uint32_t>(element.size());
  out->append(reinterpret_cast<const char*>(&length), sizeof(length));
  out->append(element);
}

// The classes of one output, replacing its contents, datatype and shape.
absl::Status Classify(int64_t k, bool batching,
                      const std::vector<std::string>* labels,
                      inference::ModelInferResponse::InferOutputTensor* output,
                      std::string* raw) {
  const DataType type = DataTypeFromName(output->datatype());
  const size_t element = ElementByteSize(type);
  if (element == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output '", output->name(),
        "': classification needs a numeric output, not ", output->datatype()));
  }
  const int64_t elements = static_cast<int64_t>(raw->size() / element);
  const int64_t rows =
      batching && output->shape_size() > 0 ? output->shape(0) : 1;
  if (rows <= 0 || elements % rows != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("output '", output->name(), "': cannot split its ",
                     elements, " values into ", rows, " rows"));
  }
  const int64_t classes = elements / rows;
  const int64_t take = std::min(k, classes);
  std::string bytes;
  for (int64_t r = 0; r < rows; ++r) {
    auto scores = RowScores(type, raw->data() + r * classes * element, classes);
    if (!scores.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output '", output->name(), "': ", scores.status().message()));
    }
    std::vector<int64_t> order(classes);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return scores->value[a] > scores->value[b];
    });
    for (int64_t i = 0; i < take; ++i) {
      const int64_t c = order[i];
      std::string text = absl::StrCat(scores->text[c], ":", c);
      if (labels != nullptr && c < static_cast<int64_t>(labels->size())) {
        absl::StrAppend(&text, ":", (*labels)[c]);
      }
      AppendBytesElement(text, &bytes);
    }
  }
  output->set_datatype("BYTES");
  output->clear_shape();
  if (batching) output->add_shape(rows);
  output->add_shape(take);
  *raw = std::move(bytes);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OutputLabels> ReadOutputLabels(
    const std::filesystem::path& model_dir,
    const inference::ModelConfig& config) {
  OutputLabels labels;
  for (const auto& output : config.output()) {
    if (output.label_filename().empty()) continue;
    const std::filesystem::path name(output.label_filename());
    auto error = [&](const char* what) {
      return absl::InvalidArgumentError(
          absl::StrCat("output '", output.name(), "': label_filename '",
                       output.label_filename(), "' ", what));
    };
    if (name.is_absolute() ||
        name.lexically_normal().string().starts_with("..")) {
      return error("must name a file inside the model directory");
    }
    std::ifstream in(model_dir / name);
    if (!in) return error("cannot be read");
    std::vector<std::string>& lines = labels[output.name()];
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      lines.push_back(line);
    }
  }
  return labels;
}

absl::StatusOr<std::map<std::string, int64_t>> ReadClassificationParameters(
    const inference::ModelInferRequest& request) {
  std::map<std::string, int64_t> top_k;
  for (const auto& output : request.outputs()) {
    auto it = output.parameters().find("classification");
    if (it == output.parameters().end()) continue;
    const inference::InferParameter& p = it->second;
    int64_t k = 0;
    if (p.has_int64_param()) k = p.int64_param();
    if (p.has_uint64_param())
      k = static_cast<int64_t>(std::min<uint64_t>(p.uint64_param(), INT64_MAX));
    if (k <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output '", output.name(),
          "': parameter 'classification' must be a positive integer"));
    }
    top_k[output.name()] = k;
  }
  return top_k;
}

absl::Status ApplyClassification(const ClassificationRequest& classification,
                                 inference::ModelInferResponse* response) {
  for (int i = 0; i < response->outputs_size(); ++i) {
    auto* output = response->mutable_outputs(i);
    auto k = classification.top_k.find(output->name());
    if (k == classification.top_k.end()) continue;
    const std::vector<std::string>* labels = nullptr;
    if (classification.labels != nullptr) {
      auto l = classification.labels->find(output->name());
      if (l != classification.labels->end()) labels = &l->second;
    }
    if (i >= response->raw_output_contents_size()) {
      return absl::InternalError(
          absl::StrCat("output '", output->name(), "' has no contents"));
    }
    if (absl::Status s =
            Classify(k->second, classification.batching, labels, output,
                     response->mutable_raw_output_contents(i));
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace coalesce
