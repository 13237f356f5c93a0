// bare-grpc-server: the cost floor of a KServe v2 gRPC server.
//
// Serves inference.GRPCInferenceService with no model, no batching and no
// compute: ModelInfer answers each request with its own inputs as outputs
// (same shapes and datatypes, bytes copied), so a load generator measures
// only gRPC, protobuf and the loopback network. Used by benchmarks/run-suite
// as the reference for Coalesce's per-request overhead.
//
// The model it pretends to serve is described by flags: its name, its
// max_batch_size, and one --tensor per input; output i is named after input
// i by --output (default "<input>_echo"). Any model name is accepted on the
// control RPCs only when it matches --model; others answer NOT_FOUND.
//
// Served: ServerLive, ServerReady, ModelReady, ServerMetadata, ModelMetadata,
// ModelConfig (name, max_batch_size, inputs, outputs), ModelStatistics (the
// model's counters: inference and execution counts and success time, so a
// client can tell the batch size is 1), ModelInfer. Everything else is
// UNIMPLEMENTED. All handlers use gRPC's callback API and answer inline.
//
// Threading: handlers run on gRPC's callback threads; the statistics are
// atomics. SIGINT/SIGTERM shut the server down and exit 0.

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/command_line.h"
#include "proto/grpc_service.grpc.pb.h"
#include "proto/model_config.pb.h"

namespace {

using coalesce::AddOptionWith;
using coalesce::MakeCommandLine;
using coalesce::ParseCommandLineOrExit;

struct TensorSpec {
  std::string name;
  std::string datatype;       // KServe name: "FP32", "INT64", ...
  std::vector<int64_t> dims;  // without the batch dimension
};

struct BareOptions {
  std::string address = "127.0.0.1";
  int port = 0;
  std::string model = "identity";
  int max_batch_size = 8;
  std::vector<TensorSpec> inputs;
  std::vector<std::string> outputs;
};

// "NAME:DATATYPE:D1,D2,...": false when malformed.
bool ParseTensor(const std::string& text, TensorSpec* spec) {
  const size_t a = text.find(':');
  const size_t b = a == std::string::npos ? a : text.find(':', a + 1);
  if (b == std::string::npos || a == 0) return false;
  spec->name = text.substr(0, a);
  spec->datatype = text.substr(a + 1, b - a - 1);
  std::string dims = text.substr(b + 1);
  size_t start = 0;
  while (start <= dims.size()) {
    size_t end = dims.find(',', start);
    if (end == std::string::npos) end = dims.size();
    const std::string dim = dims.substr(start, end - start);
    char* rest = nullptr;
    const long long value = std::strtoll(dim.c_str(), &rest, 10);
    if (dim.empty() || *rest != '\0') return false;
    spec->dims.push_back(value);
    start = end + 1;
  }
  return !spec->datatype.empty();
}

// The flags (base/command_line.h), writing into `options`.
std::unique_ptr<CLI::App> CommandLine(BareOptions& options) {
  auto app = MakeCommandLine(
      "Usage: bare-grpc-server [flags]\n\n"
      "A KServe v2 gRPC server without batching or compute: ModelInfer\n"
      "returns the request's inputs as outputs. Prints 'listening on\n"
      "ADDR:PORT'.");
  app->add_option("--address", options.address, "Address to listen on.")
      ->type_name("ADDR");
  app->add_option("--port", options.port, "Port; 0 picks a free one.")
      ->check(CLI::Range(0, 65535).description(""))
      ->type_name("PORT");
  app->add_option("--model", options.model,
                  "The one model name the control RPCs accept.")
      ->type_name("NAME");
  app->add_option("--max-batch-size", options.max_batch_size,
                  "max_batch_size in the model's config.")
      ->check(CLI::Range(0, INT_MAX).description(""))
      ->type_name("N");
  AddOptionWith(
      *app, "--tensor",
      [&options](const std::string& v) -> absl::Status {
        TensorSpec spec;
        if (!ParseTensor(v, &spec)) {
          return absl::InvalidArgumentError(
              "--tensor wants NAME:DATATYPE:D1,D2,..., got '" + v + "'");
        }
        options.inputs.push_back(spec);
        return absl::OkStatus();
      },
      "An input, dims without the batch dimension (repeatable; default "
      "INPUT0:FP32:16).",
      /*repeatable=*/true)
      ->type_name("NAME:DATATYPE:D1,D2,...");
  app->add_option("--output", options.outputs,
                  "The output echoing the input of the same position "
                  "(repeatable; default <input>_echo).")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false)
      ->type_name("NAME");
  return app;
}

// Parses argv into *options; false (after a message) on a bad flag. Exits
// 0 after printing --help.
bool ParseFlags(int argc, char** argv, BareOptions* options) {
  auto app = CommandLine(*options);
  if (std::optional<int> code = ParseCommandLineOrExit(
          *app, argc, argv, "bare-grpc-server", /*error_exit_code=*/2)) {
    if (*code != 0) return false;
    std::exit(0);
  }
  if (options->inputs.empty())
    options->inputs.push_back({"INPUT0", "FP32", {16}});
  if (options->outputs.size() > options->inputs.size()) {
    std::cerr << "more --output than --tensor flags\n";
    return false;
  }
  for (size_t i = options->outputs.size(); i < options->inputs.size(); ++i) {
    options->outputs.push_back(options->inputs[i].name + "_echo");
  }
  return true;
}

inference::DataType ConfigDataType(const std::string& kserve) {
  static const std::pair<const char*, inference::DataType> kTypes[] = {
      {"BOOL", inference::TYPE_BOOL},   {"UINT8", inference::TYPE_UINT8},
      {"INT8", inference::TYPE_INT8},   {"INT32", inference::TYPE_INT32},
      {"INT64", inference::TYPE_INT64}, {"FP16", inference::TYPE_FP16},
      {"FP32", inference::TYPE_FP32},   {"FP64", inference::TYPE_FP64},
      {"BYTES", inference::TYPE_STRING}};
  for (const auto& [name, type] : kTypes) {
    if (kserve == name) return type;
  }
  return inference::TYPE_INVALID;
}

class BareService final
    : public inference::GRPCInferenceService::CallbackService {
 public:
  explicit BareService(BareOptions options) : options_(std::move(options)) {}

  grpc::ServerUnaryReactor* ServerLive(
      grpc::CallbackServerContext* ctx, const inference::ServerLiveRequest*,
      inference::ServerLiveResponse* r) override {
    r->set_live(true);
    return Done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerReady(
      grpc::CallbackServerContext* ctx, const inference::ServerReadyRequest*,
      inference::ServerReadyResponse* r) override {
    r->set_ready(true);
    return Done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelReady(
      grpc::CallbackServerContext* ctx, const inference::ModelReadyRequest* q,
      inference::ModelReadyResponse* r) override {
    r->set_ready(q->name() == options_.model);
    return Done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerMetadata(
      grpc::CallbackServerContext* ctx, const inference::ServerMetadataRequest*,
      inference::ServerMetadataResponse* r) override {
    r->set_name("bare-grpc-server");
    r->set_version("0");
    return Done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelMetadata(
      grpc::CallbackServerContext* ctx,
      const inference::ModelMetadataRequest* q,
      inference::ModelMetadataResponse* r) override {
    if (q->name() != options_.model) return Done(ctx, NotFound(q->name()));
    r->set_name(options_.model);
    r->add_versions("1");
    r->set_platform("bare");
    for (size_t i = 0; i < options_.inputs.size(); ++i) {
      FillMetadata(options_.inputs[i], options_.inputs[i].name,
                   r->add_inputs());
      FillMetadata(options_.inputs[i], options_.outputs[i], r->add_outputs());
    }
    return Done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelConfig(
      grpc::CallbackServerContext* ctx, const inference::ModelConfigRequest* q,
      inference::ModelConfigResponse* r) override {
    if (q->name() != options_.model) return Done(ctx, NotFound(q->name()));
    inference::ModelConfig* config = r->mutable_config();
    config->set_name(options_.model);
    config->set_max_batch_size(options_.max_batch_size);
    for (size_t i = 0; i < options_.inputs.size(); ++i) {
      const TensorSpec& in = options_.inputs[i];
      inference::ModelInput* input = config->add_input();
      input->set_name(in.name);
      input->set_data_type(ConfigDataType(in.datatype));
      for (int64_t d : in.dims) input->add_dims(d);
      inference::ModelOutput* output = config->add_output();
      output->set_name(options_.outputs[i]);
      output->set_data_type(ConfigDataType(in.datatype));
      for (int64_t d : in.dims) output->add_dims(d);
    }
    return Done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelStatistics(
      grpc::CallbackServerContext* ctx,
      const inference::ModelStatisticsRequest* q,
      inference::ModelStatisticsResponse* r) override {
    if (!q->name().empty() && q->name() != options_.model) {
      return Done(ctx, NotFound(q->name()));
    }
    inference::ModelStatistics* stats = r->add_model_stats();
    stats->set_name(options_.model);
    stats->set_version("1");
    const uint64_t count = infer_count_.load(std::memory_order_relaxed);
    stats->set_inference_count(rows_.load(std::memory_order_relaxed));
    stats->set_execution_count(count);
    inference::StatisticDuration* success =
        stats->mutable_inference_stats()->mutable_success();
    success->set_count(count);
    success->set_ns(infer_ns_.load(std::memory_order_relaxed));
    return Done(ctx, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelInfer(
      grpc::CallbackServerContext* ctx, const inference::ModelInferRequest* q,
      inference::ModelInferResponse* r) override {
    const auto start = std::chrono::steady_clock::now();
    grpc::Status status = Echo(*q, r);
    if (status.ok()) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      infer_count_.fetch_add(1, std::memory_order_relaxed);
      infer_ns_.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
      const int64_t rows = q->inputs_size() > 0 &&
                                   q->inputs(0).shape_size() > 0 &&
                                   options_.max_batch_size > 0
                               ? q->inputs(0).shape(0)
                               : 1;
      rows_.fetch_add(static_cast<uint64_t>(rows), std::memory_order_relaxed);
    }
    return Done(ctx, status);
  }

 private:
  static grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* ctx,
                                        const grpc::Status& status) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }

  static grpc::Status NotFound(const std::string& name) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "unknown model '" + name + "'");
  }

  void FillMetadata(const TensorSpec& spec, const std::string& name,
                    inference::ModelMetadataResponse::TensorMetadata* t) const {
    t->set_name(name);
    t->set_datatype(spec.datatype);
    if (options_.max_batch_size > 0) t->add_shape(-1);
    for (int64_t d : spec.dims) t->add_shape(d);
  }

  // Output i = input i under the output's name, same datatype, shape, bytes.
  grpc::Status Echo(const inference::ModelInferRequest& q,
                    inference::ModelInferResponse* r) const {
    if (q.model_name() != options_.model) return NotFound(q.model_name());
    if (static_cast<size_t>(q.inputs_size()) != options_.inputs.size()) {
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          "expected " + std::to_string(options_.inputs.size()) + " inputs");
    }
    r->set_model_name(options_.model);
    r->set_model_version("1");
    r->set_id(q.id());
    const bool raw = q.raw_input_contents_size() > 0;
    for (int i = 0; i < q.inputs_size(); ++i) {
      const auto& in = q.inputs(i);
      size_t position = 0;
      while (position < options_.inputs.size() &&
             options_.inputs[position].name != in.name()) {
        ++position;
      }
      if (position == options_.inputs.size()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "unknown input '" + in.name() + "'");
      }
      auto* out = r->add_outputs();
      out->set_name(options_.outputs[position]);
      out->set_datatype(in.datatype());
      *out->mutable_shape() = in.shape();
      if (raw) {
        if (i >= q.raw_input_contents_size()) {
          return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              "fewer raw_input_contents than inputs");
        }
        r->add_raw_output_contents(q.raw_input_contents(i));
      } else {
        *out->mutable_contents() = in.contents();
      }
    }
    return grpc::Status::OK;
  }

  const BareOptions options_;
  std::atomic<uint64_t> infer_count_{0};
  std::atomic<uint64_t> infer_ns_{0};
  std::atomic<uint64_t> rows_{0};
};

}  // namespace

int main(int argc, char** argv) {
  BareOptions options;
  if (!ParseFlags(argc, argv, &options)) return 2;

  // Signals are taken by sigwait below; block them before gRPC starts its
  // threads so every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  BareService service(options);
  grpc::ServerBuilder builder;
  int selected_port = 0;
  const std::string address =
      options.address + ":" + std::to_string(options.port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(),
                           &selected_port);
  builder.SetMaxReceiveMessageSize(INT32_MAX);
  builder.SetMaxSendMessageSize(INT32_MAX);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || selected_port == 0) {
    std::cerr << "bare-grpc-server: cannot listen on " << address << "\n";
    return 1;
  }
  std::cout << "listening on " << options.address << ":" << selected_port
            << std::endl;

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return 0;
}
