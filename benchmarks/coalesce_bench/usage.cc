#include "benchmarks/coalesce_bench/usage.h"

namespace coalesce::bench {

std::string BenchUsageIntro() {
  return R"(coalesce-bench: load generator for KServe v2 gRPC inference servers
(Coalesce, Triton, any server speaking inference.GRPCInferenceService).

Usage: coalesce-bench -m MODEL [-u HOST:PORT] [flags]

MODES
  Closed loop (default): a fixed number of requests is always in flight;
  each response immediately triggers the next request. Latency is measured
  from send to response. Sweep the concurrency with --concurrency-range.

  Open loop (--request-rate-range): requests are sent on a schedule at a
  target rate, whether or not earlier ones have answered. Latency is measured
  from each request's SCHEDULED send time, so if the client falls behind
  (late wake-up, --max-inflight reached) the delay counts (no coordinated
  omission). Arrivals: poisson (default), constant, bursty (on/off), or
  step and ramp (Poisson whose rate moves between a low fraction of the
  level's and the level's, in steps or linearly, each cycle).

MEASUREMENT
  Per load level: warm-up (results dropped), then windows of --window-ms
  repeated until the last three agree within --stability-percent on both
  throughput and p50, or --max-windows is reached (then marked * in the
  table). The level's result pools the last three windows. Percentiles are
  exact (nearest rank over every recorded latency). The server-side split
  (queue, compute input/infer/output per request, average executed batch
  size) comes from ModelStatistics read before and after each window; it
  covers every client of the model. The client's own CPU use is reported,
  with a warning when it nears saturation.

INPUTS come from ModelMetadata: random data of each input's datatype
and shape, unless --input-data names files. --padding-mask fills one input
as a transformer's padding mask (each row padded to the sequence length S,
its first L entries 1, L varying per row), and --request-variants prebuilds
several different requests that the senders cycle through, so that the
server sees mixed lengths; the header reports the mask and its mean fill
(mean L / S).)";
}

std::string BenchUsageFooter() {
  return R"(
EXIT CODES
  0 success; 1 the run failed (unknown model, unreachable server, bad input
  data, no request succeeded, an output file not written); 2 bad flags.

EXAMPLES
  # concurrency 1, 2, 4, ..., 16 against a local server
  coalesce-bench -m mlp_classifier -u 127.0.0.1:8001 --concurrency-range 1:16:3

  # open loop: Poisson arrivals at 100, 200, ..., 500 requests/s, files + plot
  coalesce-bench -m mlp_classifier --request-rate-range 100:500:100 \
      --output results/mlp --plot results/mlp.svg

  # bursts: 50 ms at a high rate, then 200 ms of silence, 300 req/s on average
  coalesce-bench -m two_io --request-rate-range 300 --arrival bursty \
      --burst-on-ms 50 --burst-off-ms 200

  # batches of 8, a variable-length input, quick windows
  coalesce-bench -m my_model --batch-size 8 --shape tokens:128 \
      --window-ms 500 --max-windows 6 --warmup-ms 200

  # inputs from files: ./data/input holds 1x1024 FP32 values
  coalesce-bench -m mlp_classifier --input-data ./data

  # mixed request lengths: attention_mask [batch, 128], each row's length L
  # uniform on [16, 128], 64 different requests sent round-robin
  coalesce-bench -m bert --batch-size 4 \
      --padding-mask attention_mask=uniform:16 --concurrency-range 8

  # lengths from a file (one per line, cycled), ids from ./data
  coalesce-bench -m bert --input-data ./data \
      --padding-mask attention_mask=file:lengths.txt --request-variants 256)";
}

}  // namespace coalesce::bench
