#include "benchmarks/coalesce_bench/input_data.h"

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace coalesce::bench {
namespace {

constexpr int64_t kMaxTensorBytes = (int64_t{1} << 31) - 1;  // gRPC's limit

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

std::string InputNames(const std::vector<TensorSpec>& inputs) {
  std::vector<std::string> names;
  for (const TensorSpec& t : inputs) names.push_back(t.name);
  return absl::StrJoin(names, ", ");
}

// The dims after the batch dimension (or all of them), with --shape applied.
absl::StatusOr<std::vector<int64_t>> InnerDims(const TensorSpec& input,
                                               const ShapeRequest& request) {
  std::vector<int64_t> dims = input.shape;
  if (request.max_batch_size > 0) {
    if (dims.empty() || dims[0] != -1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", input.name, "' has metadata shape ", ShapeText(dims),
          ", which does not start with the batch dimension -1 although the "
          "model's max_batch_size is ",
          request.max_batch_size));
    }
    dims.erase(dims.begin());
  }
  auto given = request.shapes.find(input.name);
  if (given == request.shapes.end()) {
    for (int64_t d : dims) {
      if (d < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", input.name, "' has a variable dimension in ",
            ShapeText(dims), "; give its shape with --shape ", input.name,
            ":d1,d2,..."));
      }
    }
    return dims;
  }
  const std::vector<int64_t>& shape = given->second;
  bool matches = shape.size() == dims.size();
  for (size_t i = 0; matches && i < dims.size(); ++i) {
    matches = dims[i] < 0 || dims[i] == shape[i];
  }
  if (!matches) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shape ", input.name, ":", absl::StrJoin(shape, ","),
        " does not fit the model's shape ", ShapeText(dims),
        request.max_batch_size > 0 ? " (batch dimension excluded)" : ""));
  }
  return shape;
}

absl::Status CheckBatchSize(const ShapeRequest& request) {
  if (request.max_batch_size > 0 &&
      request.batch_size > request.max_batch_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--batch-size ", request.batch_size,
        " exceeds the model's max_batch_size ", request.max_batch_size));
  }
  if (request.max_batch_size == 0 && request.batch_size_set &&
      request.batch_size != 1) {
    return absl::InvalidArgumentError(
        "--batch-size needs a model whose config has max_batch_size > 0; "
        "give the full shape with --shape instead");
  }
  return absl::OkStatus();
}

absl::Status CheckShapeNames(const std::vector<TensorSpec>& inputs,
                             const ShapeRequest& request) {
  for (const auto& [name, dims] : request.shapes) {
    bool found = false;
    for (const TensorSpec& t : inputs) found |= t.name == name;
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat("--shape names '", name,
                       "', which is not an input of "
                       "the model (inputs: ",
                       InputNames(inputs), ")"));
    }
  }
  return absl::OkStatus();
}

uint16_t FloatToHalfBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  if (exponent <= 0) return sign;  // too small for a normal half: zero
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7bff);
  return static_cast<uint16_t>(sign | (exponent << 10) |
                               ((bits >> 13) & 0x3ff));
}

template <typename T>
void AppendValue(std::string* out, T value) {
  char buf[sizeof(T)];
  std::memcpy(buf, &value, sizeof(T));  // little-endian host (x86, arm64)
  out->append(buf, sizeof(T));
}

// One random element of a fixed-size datatype, appended to *out.
void AppendRandomElement(absl::string_view datatype, std::mt19937_64& rng,
                         std::string* out) {
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 99);
  if (datatype == "FP32") return AppendValue(out, real(rng));
  if (datatype == "FP64")
    return AppendValue(out, static_cast<double>(real(rng)));
  if (datatype == "FP16") return AppendValue(out, FloatToHalfBits(real(rng)));
  if (datatype == "BF16") {
    const float f = real(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    return AppendValue(out, static_cast<uint16_t>(bits >> 16));
  }
  if (datatype == "BOOL")
    return AppendValue(out, static_cast<uint8_t>(rng() & 1));
  const int v = small(rng);
  if (datatype == "INT8" || datatype == "UINT8") {
    return AppendValue(out, static_cast<uint8_t>(v));
  }
  if (datatype == "INT16" || datatype == "UINT16") {
    return AppendValue(out, static_cast<uint16_t>(v));
  }
  if (datatype == "INT32" || datatype == "UINT32") {
    return AppendValue(out, static_cast<uint32_t>(v));
  }
  AppendValue(out, static_cast<uint64_t>(v));  // INT64, UINT64
}

void AppendRandomString(std::mt19937_64& rng, std::string* out) {
  std::uniform_int_distribution<int> length(1, 16);
  std::uniform_int_distribution<int> letter('a', 'z');
  const uint32_t n = static_cast<uint32_t>(length(rng));
  AppendValue(out, n);
  for (uint32_t i = 0; i < n; ++i)
    out->push_back(static_cast<char>(letter(rng)));
}

}  // namespace

absl::StatusOr<int64_t> DatatypeByteSize(absl::string_view datatype) {
  static const auto* sizes = new std::map<std::string, int64_t, std::less<>>{
      {"BOOL", 1},   {"UINT8", 1}, {"INT8", 1},   {"UINT16", 2}, {"INT16", 2},
      {"FP16", 2},   {"BF16", 2},  {"UINT32", 4}, {"INT32", 4},  {"FP32", 4},
      {"UINT64", 8}, {"INT64", 8}, {"FP64", 8},   {"BYTES", 0}};
  auto it = sizes->find(datatype);
  if (it == sizes->end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown datatype '", datatype, "'"));
  }
  return it->second;
}

int64_t ElementCount(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::StatusOr<std::vector<TensorSpec>> ResolveInputShapes(
    const std::vector<TensorSpec>& metadata_inputs,
    const ShapeRequest& request) {
  if (absl::Status s = CheckBatchSize(request); !s.ok()) return s;
  if (absl::Status s = CheckShapeNames(metadata_inputs, request); !s.ok()) {
    return s;
  }
  std::vector<TensorSpec> resolved;
  for (const TensorSpec& input : metadata_inputs) {
    auto inner = InnerDims(input, request);
    if (!inner.ok()) return inner.status();
    auto element_size = DatatypeByteSize(input.datatype);
    if (!element_size.ok()) return element_size.status();
    TensorSpec spec{input.name, input.datatype, {}};
    if (request.max_batch_size > 0) spec.shape.push_back(request.batch_size);
    spec.shape.insert(spec.shape.end(), inner->begin(), inner->end());
    const double bytes =
        static_cast<double>(ElementCount(spec.shape)) *
        static_cast<double>(std::max<int64_t>(*element_size, 1));
    if (bytes > static_cast<double>(kMaxTensorBytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", input.name, "' of shape ",
                       ShapeText(spec.shape), " exceeds 2 GiB"));
    }
    resolved.push_back(std::move(spec));
  }
  return resolved;
}

absl::StatusOr<std::string> RandomTensorData(const TensorSpec& spec,
                                             uint64_t seed) {
  auto element_size = DatatypeByteSize(spec.datatype);
  if (!element_size.ok()) return element_size.status();
  std::mt19937_64 rng(seed);
  const int64_t n = ElementCount(spec.shape);
  std::string out;
  out.reserve(static_cast<size_t>(n * std::max<int64_t>(*element_size, 8)));
  for (int64_t i = 0; i < n; ++i) {
    if (*element_size == 0) {
      AppendRandomString(rng, &out);
    } else {
      AppendRandomElement(spec.datatype, rng, &out);
    }
  }
  return out;
}

absl::Status CheckBytesTensor(absl::string_view data, int64_t elements) {
  size_t pos = 0;
  int64_t count = 0;
  while (pos < data.size()) {
    uint32_t length = 0;
    if (data.size() - pos < sizeof(length)) break;
    std::memcpy(&length, data.data() + pos, sizeof(length));
    pos += sizeof(length);
    if (data.size() - pos < length) break;
    pos += length;
    ++count;
  }
  if (pos != data.size() || count != elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "holds ", count, " complete length-prefixed BYTES elements",
        pos != data.size() ? " and trailing bytes" : "", "; the shape needs ",
        elements));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTensorFile(const std::string& dir,
                                           const TensorSpec& spec) {
  const std::string path = absl::StrCat(dir, "/", spec.name);
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(absl::StrCat("cannot read input file ", path));
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  std::string data = std::move(contents).str();
  auto element_size = DatatypeByteSize(spec.datatype);
  if (!element_size.ok()) return element_size.status();
  const int64_t elements = ElementCount(spec.shape);
  if (*element_size == 0) {
    absl::Status s = CheckBytesTensor(data, elements);
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, " ", s.message()));
    }
    return data;
  }
  const int64_t expected = elements * *element_size;
  if (static_cast<int64_t>(data.size()) != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " has ", data.size(), " bytes; input '", spec.name, "' (",
        spec.datatype, " ", ShapeText(spec.shape), ") needs ", expected));
  }
  return data;
}

}  // namespace coalesce::bench
