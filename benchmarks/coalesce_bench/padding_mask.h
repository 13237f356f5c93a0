// --padding-mask NAME=DIST: an input filled as a transformer's padding mask,
// so that requests carry mixed lengths the way users send them: each row
// padded to the model's sequence length S, its first L entries 1 and the
// rest 0, L drawn per row from DIST.
//
// The mask input's last dimension is the sequence axis S; every other index
// (each batch entry, each leading index) is a row with its own L. Values are
// 1 (true, 1.0) and 0 in the input's datatype, little-endian: any integer,
// float or BOOL datatype, not BYTES.
//
// DIST:
//   uniform:MIN       L uniform on the integers [MIN, S]   (MIN >= 1)
//   uniform:MIN:MAX   L uniform on [MIN, MAX]              (MAX <= S)
//   file:PATH         lengths from PATH, one positive integer per line
//                     (blank lines and surrounding spaces ignored), each
//                     <= S, used in order and cycled.
// A uniform draw is MIN + (x mod (MAX - MIN + 1)) for the next output x of
// std::mt19937_64 seeded with --seed: the same lengths on every standard
// library (std::uniform_int_distribution is not portable).
//
// Errors are InvalidArgument and name --padding-mask. Parsing checks the
// flag alone (and reads the file); PaddingMaskGenerator::Create checks it
// against the model's inputs. Thread-compatible.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_PADDING_MASK_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_PADDING_MASK_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchmarks/coalesce_bench/input_data.h"

namespace coalesce::bench {

struct PaddingMaskFlag {
  enum class Kind { kUniform, kFile };

  std::string input;  // NAME
  Kind kind = Kind::kUniform;
  int64_t min = 1;               // uniform
  int64_t max = 0;               // uniform; 0: S
  std::string path;              // file
  std::vector<int64_t> lengths;  // file: its lengths, in order
  std::string text;              // NAME=DIST as given, for the report
};

// "NAME=DIST" (the first '=' ends NAME). Reads file:PATH. InvalidArgument
// naming --padding-mask for an empty NAME, an unknown DIST, MIN < 1,
// MAX < MIN, a file that cannot be read, is empty or malformed.
absl::StatusOr<PaddingMaskFlag> ParsePaddingMaskFlag(absl::string_view text);

// The lengths of a lengths file's `contents` (`path` is for messages).
absl::StatusOr<std::vector<int64_t>> ParseMaskLengths(
    absl::string_view contents, absl::string_view path);

// Bytes of a mask of `datatype` with lengths.size() rows of `seq_len`
// entries, row r being lengths[r] ones then zeros. REQUIRES: 0 <= lengths[r] <=
// seq_len. InvalidArgument for BYTES or an unknown datatype.
absl::StatusOr<std::string> PaddingMaskBytes(
    absl::string_view datatype, int64_t seq_len,
    const std::vector<int64_t>& lengths);

// Makes one mask tensor per request from the flag and the resolved inputs.
class PaddingMaskGenerator {
 public:
  // InvalidArgument naming --padding-mask when NAME is not one of `inputs`
  // (resolved shapes), has datatype BYTES or no dimension, or when MIN, MAX
  // or a file's length exceeds the input's sequence length S.
  static absl::StatusOr<PaddingMaskGenerator> Create(
      const PaddingMaskFlag& flag, const std::vector<TensorSpec>& inputs,
      uint64_t seed);

  // The bytes of the next request's mask: rows() fresh lengths, in row
  // order. Adds the lengths to the running total (mean_fill()).
  std::string Next();

  int input_index() const { return input_index_; }  // in `inputs`
  int64_t seq_len() const { return seq_len_; }
  int64_t rows() const { return rows_; }
  int64_t min_length() const { return min_; }
  int64_t max_length() const { return max_; }
  // Mean L / S over every row Next() has produced; 0 before the first.
  double mean_fill() const;

 private:
  PaddingMaskGenerator(const PaddingMaskFlag& flag, int input_index,
                       const TensorSpec& spec, int64_t seq_len, uint64_t seed);

  int64_t NextLength();

  PaddingMaskFlag::Kind kind_;
  std::vector<int64_t> file_lengths_;
  size_t file_pos_ = 0;
  std::mt19937_64 rng_;
  int input_index_;
  std::string datatype_;
  int64_t seq_len_;
  int64_t rows_;
  int64_t min_;  // the range of L: the uniform bounds, or the file's
  int64_t max_;
  int64_t length_sum_ = 0;
  int64_t length_count_ = 0;
};

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_PADDING_MASK_H_
