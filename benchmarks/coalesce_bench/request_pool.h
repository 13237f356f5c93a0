// RequestPool: the prepared requests a benchmark sends, handed out
// round-robin.
//
// Contract: the pool is immutable once constructed: its requests never
// change, move or go away while the pool lives, so a reference returned by
// Next() or at() stays valid (and may be passed to gRPC as the request of a
// call in flight) for the pool's whole lifetime. Next() is thread-safe: one
// atomic counter, so concurrent callers get variants 0, 1, ..., size()-1, 0,
// ... in the order their fetch-and-add lands. A pool holds at least one
// request. Not copyable or movable; share it by pointer.
//
// BuildRequestPool makes the pool of a run: `variants` requests differing in
// their random inputs (the seed advancing from request to request) and, with
// --padding-mask, in their mask (padding_mask.h); with --input-data, every
// variant has the same file contents and only the mask differs.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_REQUEST_POOL_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_REQUEST_POOL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/coalesce_bench/infer_request.h"
#include "benchmarks/coalesce_bench/padding_mask.h"
#include "proto/grpc_service.pb.h"

namespace coalesce::bench {

class RequestPool {
 public:
  // REQUIRES: !requests.empty().
  explicit RequestPool(std::vector<inference::ModelInferRequest> requests);

  RequestPool(const RequestPool&) = delete;
  RequestPool& operator=(const RequestPool&) = delete;

  // The next request, round-robin.
  const inference::ModelInferRequest& Next() const;

  const inference::ModelInferRequest& at(size_t i) const {
    return requests_[i];
  }
  size_t size() const { return requests_.size(); }

 private:
  const std::vector<inference::ModelInferRequest> requests_;
  mutable std::atomic<uint64_t> next_{0};
};

// What a run's pool is made of.
struct PoolContents {
  RequestContents request;  // variant 0's seed is request.seed
  int variants = 1;         // >= 1
  std::optional<PaddingMaskFlag> padding_mask;
};

// The pool and what its masks were, for the report.
struct BuiltPool {
  std::shared_ptr<const RequestPool> pool;
  // With a padding mask: the input's sequence length, the range of L, rows
  // per request and mean L / S over every row of every variant.
  int64_t seq_len = 0;
  int64_t min_length = 0;
  int64_t max_length = 0;
  int64_t mask_rows = 0;
  double mean_fill = 0;
};

// Errors: input_data.h's, padding_mask.h's (PaddingMaskGenerator::Create),
// and InvalidArgument naming --request-variants when the pool would hold
// more than 4 GiB of input bytes.
absl::StatusOr<BuiltPool> BuildRequestPool(const PoolContents& contents);

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_REQUEST_POOL_H_
