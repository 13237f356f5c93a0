// Reporting a run: the table on stdout, warnings about the client itself,
// and the CSV and JSON files (one row / one object per load level).
//
// Throughput is reported in inferences per second (requests/s times the
// batch size, as Triton's perf_analyzer counts) and in requests per second.
// Latencies are in milliseconds, the server split in microseconds per
// request. Pure functions returning text; thread-compatible.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_REPORT_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_REPORT_H_

#include <string>
#include <vector>

#include "benchmarks/coalesce_bench/options.h"
#include "benchmarks/coalesce_bench/sweep.h"

namespace coalesce::bench {

// What the run was, for the headers of the outputs.
struct RunInfo {
  std::string model;
  std::string model_version;
  std::string url;
  LoadMode mode = LoadMode::kClosedLoop;
  ArrivalKind arrival = ArrivalKind::kPoisson;
  int64_t batch_size = 1;
  int channels = 1;
  bool streaming = false;         // ModelStreamInfer instead of ModelInfer
  std::string protocol = "grpc";  // or "http"
  std::string shapes;             // e.g. "input=[1,1024]"
  bool server_stats = false;
  int cores = 1;
  int request_variants = 1;  // requests sent round-robin (request_pool.h)
  // --padding-mask as given (empty: none), and what its variants hold: the
  // sequence length S, the range of L, mean L / S over every row.
  std::string padding_mask;
  int64_t mask_seq_len = 0;
  int64_t mask_min_length = 0;
  int64_t mask_max_length = 0;
  double mask_mean_fill = 0;
};

// The header lines about the requests sent ("# ..." each, newline-ended):
// the padding mask and its mean fill, the number of variants; empty for a
// single request without a mask.
std::string RequestsHeader(const RunInfo& run);

std::string TableHeader(const RunInfo& run);
std::string TableRow(const RunInfo& run, const LevelReport& level);

// Warnings about a level, one per line (empty when nothing is wrong): the
// client near saturation, late open-loop sends, errors, instability.
std::vector<std::string> LevelWarnings(const RunInfo& run,
                                       const LevelReport& level);

std::string CsvText(const RunInfo& run, const std::vector<LevelReport>& levels);
std::string JsonText(const RunInfo& run,
                     const std::vector<LevelReport>& levels);

// "NOT_FOUND" for 5, etc.
std::string GrpcCodeName(int code);

// "UNAVAILABLE=3;DEADLINE_EXCEEDED=1", in code order.
std::string ErrorSummary(const WindowResult& window);

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_REPORT_H_
