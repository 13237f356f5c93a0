#include "benchmarks/coalesce_bench/request_pool.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace coalesce::bench {
namespace {

constexpr double kMaxPoolBytes = 4.0 * (int64_t{1} << 30);

double RequestBytes(const inference::ModelInferRequest& request) {
  double bytes = 0;
  for (const std::string& raw : request.raw_input_contents()) {
    bytes += static_cast<double>(raw.size());
  }
  return bytes;
}

}  // namespace

RequestPool::RequestPool(std::vector<inference::ModelInferRequest> requests)
    : requests_(std::move(requests)) {}

const inference::ModelInferRequest& RequestPool::Next() const {
  const uint64_t n = next_.fetch_add(1, std::memory_order_relaxed);
  return requests_[n % requests_.size()];
}

absl::StatusOr<BuiltPool> BuildRequestPool(const PoolContents& contents) {
  std::optional<PaddingMaskGenerator> mask;
  if (contents.padding_mask.has_value()) {
    auto created = PaddingMaskGenerator::Create(
        *contents.padding_mask, contents.request.inputs, contents.request.seed);
    if (!created.ok()) return created.status();
    mask.emplace(*std::move(created));
  }
  const std::string mask_name =
      mask ? contents.request.inputs[static_cast<size_t>(mask->input_index())]
                 .name
           : "";
  std::vector<inference::ModelInferRequest> requests;
  requests.reserve(static_cast<size_t>(contents.variants));
  RequestContents variant = contents.request;
  const uint64_t inputs = contents.request.inputs.size();
  for (int v = 0; v < contents.variants; ++v) {
    if (mask) variant.given[mask_name] = mask->Next();
    if (v > 0 && !contents.request.input_data_dir.empty()) {
      // The files are the same for every variant: only the mask differs.
      requests.push_back(requests.front());
      if (mask) {
        *requests.back().mutable_raw_input_contents(mask->input_index()) =
            variant.given[mask_name];
      }
      continue;
    }
    variant.seed = contents.request.seed + static_cast<uint64_t>(v) * inputs;
    auto request = BuildInferRequest(variant);
    if (!request.ok()) return request.status();
    if (v == 0 && RequestBytes(*request) * contents.variants > kMaxPoolBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("--request-variants ", contents.variants, " of ",
                       static_cast<int64_t>(RequestBytes(*request)),
                       " input bytes each would hold more than ",
                       "4 GiB; use fewer variants"));
    }
    requests.push_back(*std::move(request));
  }
  BuiltPool built;
  built.pool = std::make_shared<const RequestPool>(std::move(requests));
  if (mask) {
    built.seq_len = mask->seq_len();
    built.min_length = mask->min_length();
    built.max_length = mask->max_length();
    built.mask_rows = mask->rows();
    built.mean_fill = mask->mean_fill();
  }
  return built;
}

}  // namespace coalesce::bench
