#include "benchmarks/coalesce_bench/padding_mask.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace coalesce::bench {
namespace {

constexpr int64_t kMaxLength = int64_t{1} << 31;  // no dimension is longer

absl::Status MaskError(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("--padding-mask ", what));
}

absl::StatusOr<int64_t> ParseLength(absl::string_view what,
                                    absl::string_view text) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 1 || value > kMaxLength) {
    return MaskError(
        absl::StrCat(what, " needs a positive integer, got '", text, "'"));
  }
  return value;
}

absl::Status ParseUniform(absl::string_view spec, PaddingMaskFlag* flag) {
  std::vector<absl::string_view> parts = absl::StrSplit(spec, ':');
  if (parts.size() < 2 || parts.size() > 3) {
    return MaskError(
        absl::StrCat("needs NAME=uniform:MIN or NAME=uniform:MIN:MAX, got '",
                     flag->text, "'"));
  }
  auto min = ParseLength("uniform MIN", parts[1]);
  if (!min.ok()) return min.status();
  flag->min = *min;
  if (parts.size() == 3) {
    auto max = ParseLength("uniform MAX", parts[2]);
    if (!max.ok()) return max.status();
    if (*max < *min) {
      return MaskError(
          absl::StrCat("needs MIN <= MAX, got '", flag->text, "'"));
    }
    flag->max = *max;
  }
  return absl::OkStatus();
}

absl::Status ReadLengthsFile(PaddingMaskFlag* flag) {
  std::ifstream file(flag->path, std::ios::binary);
  if (!file) {
    return MaskError(absl::StrCat("cannot read lengths file ", flag->path));
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  auto lengths = ParseMaskLengths(contents.str(), flag->path);
  if (!lengths.ok()) return lengths.status();
  flag->lengths = *std::move(lengths);
  return absl::OkStatus();
}

// The bytes of the value 1 in `datatype`, little-endian.
absl::StatusOr<std::string> OneBytes(absl::string_view datatype) {
  auto size = DatatypeByteSize(datatype);
  if (!size.ok()) return size.status();
  if (*size == 0) {
    return MaskError(
        absl::StrCat("needs an integer, float or BOOL input, not ", datatype));
  }
  std::string one(static_cast<size_t>(*size), '\0');
  if (datatype == "FP16") {
    one = std::string("\x00\x3c", 2);
  } else if (datatype == "BF16") {
    one = std::string("\x80\x3f", 2);
  } else if (datatype == "FP32") {
    one = std::string("\x00\x00\x80\x3f", 4);
  } else if (datatype == "FP64") {
    one = std::string("\x00\x00\x00\x00\x00\x00\xf0\x3f", 8);
  } else {
    one[0] = '\x01';  // BOOL and the integers
  }
  return one;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> ParseMaskLengths(
    absl::string_view contents, absl::string_view path) {
  std::vector<int64_t> lengths;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(contents, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    auto length = ParseLength(
        absl::StrCat("lengths file ", path, " line ", line_number), line);
    if (!length.ok()) return length.status();
    lengths.push_back(*length);
  }
  if (lengths.empty()) {
    return MaskError(absl::StrCat("lengths file ", path,
                                  " holds no lengths (one positive integer "
                                  "per line expected)"));
  }
  return lengths;
}

absl::StatusOr<PaddingMaskFlag> ParsePaddingMaskFlag(absl::string_view text) {
  PaddingMaskFlag flag;
  flag.text = std::string(text);
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return MaskError(absl::StrCat("needs NAME=DIST, got '", text, "'"));
  }
  flag.input = std::string(text.substr(0, eq));
  const absl::string_view dist = text.substr(eq + 1);
  if (absl::StartsWith(dist, "uniform:")) {
    flag.kind = PaddingMaskFlag::Kind::kUniform;
    if (absl::Status s = ParseUniform(dist, &flag); !s.ok()) return s;
  } else if (absl::StartsWith(dist, "file:") && dist.size() > 5) {
    flag.kind = PaddingMaskFlag::Kind::kFile;
    flag.path = std::string(dist.substr(5));
    if (absl::Status s = ReadLengthsFile(&flag); !s.ok()) return s;
  } else {
    return MaskError(absl::StrCat(
        "DIST must be uniform:MIN, uniform:MIN:MAX or file:PATH, got '", dist,
        "'"));
  }
  return flag;
}

absl::StatusOr<std::string> PaddingMaskBytes(
    absl::string_view datatype, int64_t seq_len,
    const std::vector<int64_t>& lengths) {
  auto one = OneBytes(datatype);
  if (!one.ok()) return one.status();
  const size_t element = one->size();
  std::string out(lengths.size() * static_cast<size_t>(seq_len) * element,
                  '\0');
  for (size_t r = 0; r < lengths.size(); ++r) {
    char* row = out.data() + r * static_cast<size_t>(seq_len) * element;
    for (int64_t i = 0; i < lengths[r]; ++i) {
      std::memcpy(row + static_cast<size_t>(i) * element, one->data(), element);
    }
  }
  return out;
}

absl::StatusOr<PaddingMaskGenerator> PaddingMaskGenerator::Create(
    const PaddingMaskFlag& flag, const std::vector<TensorSpec>& inputs,
    uint64_t seed) {
  int index = -1;
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back(inputs[i].name);
    if (inputs[i].name == flag.input) index = static_cast<int>(i);
  }
  if (index < 0) {
    return MaskError(absl::StrCat("names '", flag.input,
                                  "', which is not an input of the model "
                                  "(inputs: ",
                                  absl::StrJoin(names, ", "), ")"));
  }
  const TensorSpec& spec = inputs[static_cast<size_t>(index)];
  if (spec.datatype == "BYTES") {
    return MaskError(absl::StrCat("input '", spec.name,
                                  "' has datatype BYTES; a mask needs an "
                                  "integer, float or BOOL input"));
  }
  if (auto one = OneBytes(spec.datatype); !one.ok()) return one.status();
  if (spec.shape.empty()) {
    return MaskError(absl::StrCat(
        "input '", spec.name,
        "' is a scalar; a mask needs a sequence axis (its last dimension)"));
  }
  const int64_t seq_len = spec.shape.back();
  const std::string where =
      absl::StrCat(" exceeds the sequence length S=", seq_len, " of input '",
                   spec.name, "' (its last dimension)");
  if (flag.kind == PaddingMaskFlag::Kind::kUniform) {
    if (flag.min > seq_len) {
      return MaskError(absl::StrCat("uniform MIN ", flag.min, where));
    }
    if (flag.max > seq_len) {
      return MaskError(absl::StrCat("uniform MAX ", flag.max, where));
    }
  } else {
    for (size_t i = 0; i < flag.lengths.size(); ++i) {
      if (flag.lengths[i] > seq_len) {
        return MaskError(absl::StrCat("lengths file ", flag.path, ": length ",
                                      flag.lengths[i], " (entry ", i + 1, ")",
                                      where));
      }
    }
  }
  return PaddingMaskGenerator(flag, index, spec, seq_len, seed);
}

PaddingMaskGenerator::PaddingMaskGenerator(const PaddingMaskFlag& flag,
                                           int input_index,
                                           const TensorSpec& spec,
                                           int64_t seq_len, uint64_t seed)
    : kind_(flag.kind),
      file_lengths_(flag.lengths),
      rng_(seed),
      input_index_(input_index),
      datatype_(spec.datatype),
      seq_len_(seq_len),
      rows_(seq_len > 0 ? ElementCount(spec.shape) / seq_len : 0) {
  if (kind_ == PaddingMaskFlag::Kind::kUniform) {
    min_ = flag.min;
    max_ = flag.max > 0 ? flag.max : seq_len;
  } else {
    min_ = *std::min_element(file_lengths_.begin(), file_lengths_.end());
    max_ = *std::max_element(file_lengths_.begin(), file_lengths_.end());
  }
}

int64_t PaddingMaskGenerator::NextLength() {
  if (kind_ == PaddingMaskFlag::Kind::kFile) {
    const int64_t length = file_lengths_[file_pos_];
    file_pos_ = (file_pos_ + 1) % file_lengths_.size();
    return length;
  }
  const uint64_t span = static_cast<uint64_t>(max_ - min_ + 1);
  return min_ + static_cast<int64_t>(rng_() % span);
}

std::string PaddingMaskGenerator::Next() {
  std::vector<int64_t> lengths;
  lengths.reserve(static_cast<size_t>(rows_));
  for (int64_t r = 0; r < rows_; ++r) {
    lengths.push_back(NextLength());
    length_sum_ += lengths.back();
    ++length_count_;
  }
  // Create checked the datatype and every length.
  return *PaddingMaskBytes(datatype_, seq_len_, lengths);
}

double PaddingMaskGenerator::mean_fill() const {
  if (length_count_ == 0 || seq_len_ == 0) return 0;
  return static_cast<double>(length_sum_) / static_cast<double>(length_count_) /
         static_cast<double>(seq_len_);
}

}  // namespace coalesce::bench
