// Reading coalesce-server's Prometheus endpoint (--metrics-url): where each
// model instance's time went and the server's idle diagnosis, to print next
// to the client-side numbers.
//
// The scrape itself is HttpGet (http_get.h, libcurl); the parsers here read
// the text exposition format. Pure functions; thread-safe.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_METRICS_SCRAPE_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_METRICS_SCRAPE_H_

#include <array>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace coalesce::bench {

// The instance states of coalesce_instance_state_seconds_total, in this order.
inline constexpr std::array<const char*, 6> kInstanceStateNames = {
    "computing",        "copying_in",      "copying_out",
    "blocked_pipeline", "idle_assembling", "idle_empty_queue"};
using StateSeconds = std::array<double, kInstanceStateNames.size()>;

// model_instance index -> seconds per state, of `model` (all versions
// summed), from a scrape.
std::map<int, StateSeconds> ParseInstanceStates(absl::string_view text,
                                                const std::string& model);

struct InstanceDiagnosisText {
  int instance = 0;
  std::string reason, detail;
};
// The coalesce_instance_diagnosis_info series of `model`.
std::vector<InstanceDiagnosisText> ParseDiagnoses(absl::string_view text,
                                                  const std::string& model);

// "instance 0: computing 35% | copying_in 3% | ... " for the growth
// between two scrapes; empty when nothing grew.
std::vector<std::string> StateSplitLines(
    const std::map<int, StateSeconds>& before,
    const std::map<int, StateSeconds>& after);

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_METRICS_SCRAPE_H_
