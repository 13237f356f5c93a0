// BenchUsage: the --help text of coalesce-bench (declared in options.h).
#include "benchmarks/coalesce_bench/options.h"

namespace coalesce::bench {

std::string BenchUsage() {
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
  omission). Arrivals: poisson (default), constant, or bursty (on/off).

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

TARGET
  -m, --model NAME            model to benchmark (required)
      --model-version N       version (default: the server's latest)
  -u, --url HOST:PORT         server address (default 127.0.0.1:8001)
      --timeout MS            per-request deadline (default 30000)

LOAD
      --concurrency-range START[:END[:STEP]]
                              closed loop levels (default 1; STEP default 1)
      --request-rate-range START[:END:STEP]
                              open loop levels, requests/s (each request
                              carries --batch-size rows)
      --arrival poisson|constant|bursty
                              open loop arrival process (default poisson)
      --burst-on-ms MS        bursty: length of a burst (default 100)
      --burst-off-ms MS       bursty: silence between bursts (default 100);
                              the rate inside a burst is raised so that the
                              mean rate over on+off is the target rate
      --max-inflight N        open loop: at most N requests outstanding; a
                              send that has to wait still counts its delay
                              (default 1000)
      --channels N            gRPC channels (connections), requests spread
                              round-robin (default 4)
      --streaming             send over ModelStreamInfer (the bidirectional
                              stream) instead of ModelInfer: one stream per
                              closed-loop request slot, or per channel in
                              open loop, each kept open between requests;
                              responses matched by request id. A stream
                              error has no gRPC code and counts as UNKNOWN
      --seed N                seed of random inputs and arrivals (default 1)

MEASUREMENT FLAGS
      --warmup-ms MS          warm-up per level (default 500)
      --warmup-requests N     warm up until N requests completed instead
      --window-ms MS          measurement window (default 2000)
      --stability-percent P   stability tolerance in % (default 10)
      --max-windows N         windows per level at most (default 10)

INPUTS
  From ModelMetadata: random data of each input's datatype and shape.
      --batch-size N          first dimension, for models whose config has
                              max_batch_size > 0 (default 1)
      --shape NAME:D1,D2,...  dims of an input with variable (-1) dims,
                              without the batch dimension when the model
                              batches; repeat per input
      --input-data DIR        read each input from DIR/<input name>: raw
                              little-endian row-major bytes (BYTES: 4-byte
                              length + bytes per element), exactly the
                              resolved shape

OUTPUT
  A table on stdout (one row per level); warnings on stderr; a live progress
  line on stderr when it is a terminal.
      --output PREFIX         also write PREFIX.csv and PREFIX.json
      --plot FILE.svg         write an SVG plot of p50 and p99 latency
                              against throughput
      --metrics-url URL       coalesce-server's metrics endpoint
                              (http://HOST:8002/metrics): after each level,
                              print where each model instance's time went
                              (computing, copying, blocked, idle); at the
                              end, the server's idle diagnosis
  -h, --help                  this text

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
)";
}

}  // namespace coalesce::bench
