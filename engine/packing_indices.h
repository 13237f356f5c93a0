// PackingIndices: which rows of a padded batch are real tokens, as the two
// index tensors a token-packed model (engine/token_packing.h) reads.
//
// A batch of B sequences padded to S positions has B * S rows, row b * S + s
// real where the padding mask's element [b, s] is nonzero. Then
//   pack    [T']   the real rows' indices, ascending (T of them), then
//                  T' - T fillers repeating the first real row (row 0 when
//                  none is real): rows the model computes and never reads;
//   unpack  [B*S]  for each padded row, its place in pack if it is real,
//                  else T' (the zero row the model appends before
//                  unpacking a graph output): padded rows come out as zeros;
//   spread  [B*S]  the same with, for a padded row, the place of its own
//                  sequence's first real row (pack's first row when the
//                  sequence has none): how values only attentions read are
//                  unpacked, the padded rows a real row of the sequence (the
//                  attention masks them as keys, and what it computes for
//                  them as queries is never read), so that no zero row has
//                  to be appended.
// T' is TokenBucket(T, B, S, buckets): T rounded up to a multiple of
// ceil(B * S / buckets), so that one batch shape needs at most `buckets`
// packed plans, each computing at most B * S / buckets rows more than the
// real ones. A device binds a plan and captures a CUDA graph per bucket:
// kTokenBuckets (8) of them. The CPU builds a plan in about 0.3 ms
// (bert-base, about 320 KB each) and takes a bucket per kCpuTokenRows
// rows (CpuTokenBuckets), so a batch computes at most 15 rows more than it
// has. Pure functions.
#ifndef COALESCE_ENGINE_PACKING_INDICES_H_
#define COALESCE_ENGINE_PACKING_INDICES_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "engine/data_type.h"

namespace coalesce {

// The names of the index inputs a token-packed model takes after its own
// (engine/token_packing.h).
inline constexpr char kPackIndexInput[] = "coalesce.pack_index";
inline constexpr char kUnpackIndexInput[] = "coalesce.unpack_index";
inline constexpr char kSpreadIndexInput[] = "coalesce.spread_index";

// How many buckets TokenBucket divides B * S rows into on a device.
inline constexpr int64_t kTokenBuckets = 8;

// The CPU's bucket width in rows, and its bucket count for a batch shape:
// ceil(batch * seq / kCpuTokenRows).
inline constexpr int64_t kCpuTokenRows = 16;
int64_t CpuTokenBuckets(int64_t batch, int64_t seq);

// T' for `tokens` real rows of a [batch, seq] mask: at least 1, at most
// batch * seq. REQUIRES: 0 <= tokens <= batch * seq, batch, seq, buckets >= 1.
int64_t TokenBucket(int64_t tokens, int64_t batch, int64_t seq,
                    int64_t buckets = kTokenBuckets);

struct PackingIndices {
  int64_t tokens = 0;           // T: the real rows
  std::vector<int64_t> pack;    // T' entries
  std::vector<int64_t> unpack;  // batch * seq entries
  std::vector<int64_t> spread;  // batch * seq entries
};

// The indices of a [batch, seq] mask of `dtype` (BOOL, INT32, INT64, FLOAT,
// or any other fixed-size numeric type) at `mask`, into `*out` (its vectors
// reused), T' from TokenBucket with `buckets`. InvalidArgument for a BYTES
// or unknown type.
absl::Status ComputePackingIndices(const void* mask, DataType dtype,
                                   int64_t batch, int64_t seq,
                                   PackingIndices* out,
                                   int64_t buckets = kTokenBuckets);

// Writes a [elements] padding mask of `dtype` at `mask` whose first
// `tokens` elements are 1 (in that type: 1.0 for a float) and the rest 0:
// a mask ComputePackingIndices counts `tokens` real rows in. InvalidArgument
// for a BYTES or unknown type. REQUIRES: 0 <= tokens <= elements.
absl::Status WriteMaskWithTokens(void* mask, DataType dtype, int64_t elements,
                                 int64_t tokens);

// What an attention over packed rows needs from a pack index (`pack`,
// `rows` entries, of a [batch, seq] mask): T, the real rows (pack's
// ascending prefix of rows inside the batch; the fillers after it repeat its
// first); offsets[b], the first real row of entry b (batch + 1 entries, the
// last T); positions[r] for r < T, real row r's position in its sequence.
// A batch with no real row packs row 0 as a filler, which this counts as
// one real row of entry 0: computed, never read.
int64_t PackedRealRows(const int64_t* pack, int64_t rows, int64_t batch,
                       int64_t seq, int64_t* offsets, int64_t* positions);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_PACKING_INDICES_H_
