// libFuzzer target: a client's side of ModelStreamInfer, driven against the
// real InferenceService (and so the StreamInferReactor) on an in-process
// channel. The server is a real ModelManager over a repository this target
// writes once at startup: identity_fp32 (FP32 [-1,4], dynamic batching) and
// identity_bytes (BYTES [-1,2], no dynamic batching).
//
// An input is a script of steps, each an op byte and its operands:
//   op % 4 == 0  SEND: a varint length n, then n bytes parsed as a
//                ModelInferRequest. A malformed one is sent as far as it
//                parsed (empty when that part would not parse on the
//                server). (op >> 2) % 4 sets its model_name: 1
//                identity_fp32, 2 identity_bytes, 0 and 3 keep the parsed
//                one. SENDs after the 16th are dropped.
//   op % 4 == 1  READ: reads 1 + (op >> 2) % 4 responses (no more than are
//                outstanding) before the next step.
//   op % 4 == 2  HALF-CLOSE: WritesDone; the script ends.
//   op % 4 == 3  CANCEL: ClientContext::TryCancel; the script ends.
// A script that runs out of bytes half-closes. Then every response is read,
// and the status.
//
// Properties (a failure prints why and aborts, so libFuzzer keeps the input):
// - the call ends before its 5 s deadline (no hang): OK after a half-close,
//   CANCELLED after a cancel;
// - responses come in request order: exactly one per request after a
//   half-close, at most one per request sent before a cancel;
// - each names its request (infer_response.id and model_name are the
//   request's) and is an error (non-empty error_message) or a success with
//   one or more outputs and one raw_output_contents entry per output; a
//   success of identity_fp32 returns that request's own input bytes;
// - after a cancelled call, a new stream is still served.
// A reactor that is never deleted shows as a leak to LeakSanitizer.
// Seeds: corpus/stream_infer_fuzzer, written by make_stream_seeds.py.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "batching/clock.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc_service.grpc.pb.h"
#include "server/inference_service.h"
#include "server/kserve_service.h"
#include "server/model_manager.h"
#include "server/server_options.h"
#include "spdlog/spdlog.h"
#include "tests/fuzz/identity_repository.h"

namespace {

using inference::GRPCInferenceService;
using inference::ModelInferRequest;
using inference::ModelStreamInferResponse;

using coalesce::fuzz::kBytesModel;
using coalesce::fuzz::kFp32Model;
constexpr int kMaxSends = 16;
constexpr auto kCallDeadline = std::chrono::seconds(5);

// Ends the input as a crash that libFuzzer records.
[[noreturn]] void Fail(const std::string& why) {
  coalesce::fuzz::Fail("stream_infer_fuzzer", why);
}

// The server under test, behind an in-process channel (no port). Created on
// the first input and never destroyed: gRPC's threads outlive every input.
class Harness {
 public:
  Harness() {
    spdlog::set_level(spdlog::level::warn);
    manager_ = coalesce::fuzz::LoadIdentityModels("stream_infer_fuzzer");
    kserve_ = std::make_unique<coalesce::KServeService>(
        manager_.get(), coalesce::RealClock(), coalesce::ServerOptions());
    kserve_->set_ready(true);
    service_ = std::make_unique<coalesce::InferenceService>(
        kserve_.get(), coalesce::ServerOptions());
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) Fail("the gRPC server did not start");
    stub_ = GRPCInferenceService::NewStub(
        server_->InProcessChannel(grpc::ChannelArguments()));
  }

  GRPCInferenceService::Stub* stub() { return stub_.get(); }

 private:
  std::unique_ptr<coalesce::ModelManager> manager_;
  std::unique_ptr<coalesce::KServeService> kserve_;
  std::unique_ptr<coalesce::InferenceService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GRPCInferenceService::Stub> stub_;
};

enum class Action { kSend, kRead, kHalfClose, kCancel };

struct Step {
  Action action = Action::kHalfClose;
  int reads = 0;              // kRead
  ModelInferRequest request;  // kSend
};

// Reads the input front to back; past its end, bytes read as 0.
struct Cursor {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;

  bool empty() const { return pos >= size; }
  uint8_t Byte() { return empty() ? 0 : data[pos++]; }
  // A base-128 varint of up to 3 bytes, clamped to the bytes left.
  size_t Length() {
    size_t n = 0;
    for (int shift = 0; shift < 21 && !empty(); shift += 7) {
      const uint8_t b = Byte();
      n |= static_cast<size_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    return std::min(n, size - pos);
  }
};

// A SEND step's request (the varint length and the bytes after the op): as
// far as they parse, but empty when that part would not parse again on the
// server (e.g. invalid UTF-8 in a string field): the call would then fail
// for a reason outside the reactor.
ModelInferRequest RequestOf(Cursor* in, uint8_t op) {
  const size_t n = in->Length();
  ModelInferRequest request;
  if (!request.ParseFromArray(in->data + in->pos, static_cast<int>(n))) {
    ModelInferRequest reparsed;
    if (!reparsed.ParseFromString(request.SerializeAsString())) {
      request.Clear();
    }
  }
  in->pos += n;
  if ((op >> 2) % 4 == 1) request.set_model_name(kFp32Model);
  if ((op >> 2) % 4 == 2) request.set_model_name(kBytesModel);
  return request;
}

std::vector<Step> ParseScript(const uint8_t* data, size_t size) {
  Cursor in{data, size};
  std::vector<Step> script;
  int sends = 0;
  while (!in.empty()) {
    const uint8_t op = in.Byte();
    Step step;
    step.action = static_cast<Action>(op % 4);
    if (step.action == Action::kSend) {
      step.request = RequestOf(&in, op);
      if (++sends > kMaxSends) continue;
    } else if (step.action == Action::kRead) {
      step.reads = 1 + (op >> 2) % 4;
    }
    const bool last =
        step.action == Action::kHalfClose || step.action == Action::kCancel;
    script.push_back(std::move(step));
    if (last) break;
  }
  return script;
}

// What one call did. `sent` points into the script it ran.
struct CallResult {
  std::vector<const ModelInferRequest*> sent;
  std::vector<ModelStreamInferResponse> received;
  bool cancelled = false;
  grpc::Status status;
};

using Stream =
    grpc::ClientReaderWriter<ModelInferRequest, ModelStreamInferResponse>;

bool ReadOne(Stream* stream, CallResult* call) {
  ModelStreamInferResponse response;
  if (!stream->Read(&response)) return false;
  call->received.push_back(std::move(response));
  return true;
}

// Runs the script's steps. Stops early when a write or read fails (the
// stream broke): the status then tells why.
void RunSteps(const std::vector<Step>& script, grpc::ClientContext* context,
              Stream* stream, CallResult* call) {
  for (const Step& step : script) {
    switch (step.action) {
      case Action::kSend:
        if (!stream->Write(step.request)) return;
        call->sent.push_back(&step.request);
        break;
      case Action::kRead:
        for (int i = 0;
             i < step.reads && call->received.size() < call->sent.size(); ++i) {
          if (!ReadOne(stream, call)) return;
        }
        break;
      case Action::kHalfClose:
        return;
      case Action::kCancel:
        context->TryCancel();
        call->cancelled = true;
        return;
    }
  }
}

CallResult RunScript(GRPCInferenceService::Stub* stub,
                     const std::vector<Step>& script) {
  CallResult call;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  std::unique_ptr<Stream> stream = stub->ModelStreamInfer(&context);
  RunSteps(script, &context, stream.get(), &call);
  if (!call.cancelled) stream->WritesDone();
  while (ReadOne(stream.get(), &call)) {
  }
  call.status = stream->Finish();
  return call;
}

// identity_fp32 answers with its input's bytes; other bytes belong to
// another request (a mix-up in the stream's order or in a batch's split).
std::string IdentityMismatch(const ModelInferRequest& request,
                             const inference::ModelInferResponse& answer) {
  if (request.model_name() != kFp32Model || request.inputs_size() != 1 ||
      request.outputs_size() != 0 || answer.raw_output_contents_size() != 1) {
    return "";
  }
  std::string expected;
  if (request.raw_input_contents_size() == 1) {
    expected = request.raw_input_contents(0);
  } else {
    const auto& values = request.inputs(0).contents().fp32_contents();
    expected.assign(reinterpret_cast<const char*>(values.data()),
                    values.size() * sizeof(float));
  }
  if (answer.raw_output_contents(0) == expected) return "";
  return absl::StrCat("identity_fp32 answered ",
                      answer.raw_output_contents(0).size(),
                      " bytes that are not the request's ", expected.size());
}

// Empty when `response` is a well-formed answer to `request`, else why not.
std::string Mismatch(const ModelInferRequest& request,
                     const ModelStreamInferResponse& response) {
  const inference::ModelInferResponse& answer = response.infer_response();
  if (answer.id() != request.id()) {
    return absl::StrCat("id '", answer.id(), "' answers request id '",
                        request.id(), "'");
  }
  if (answer.model_name() != request.model_name()) {
    return absl::StrCat("model_name '", answer.model_name(),
                        "' answers a request for '", request.model_name(), "'");
  }
  if (!response.error_message().empty()) return "";
  if (answer.outputs_size() == 0) {
    return "neither an error_message nor any output";
  }
  if (answer.raw_output_contents_size() != answer.outputs_size()) {
    return absl::StrCat(answer.outputs_size(), " outputs but ",
                        answer.raw_output_contents_size(),
                        " raw_output_contents");
  }
  return IdentityMismatch(request, answer);
}

void CheckCall(const CallResult& call) {
  const grpc::StatusCode expected =
      call.cancelled ? grpc::StatusCode::CANCELLED : grpc::StatusCode::OK;
  if (call.status.error_code() != expected) {
    Fail(absl::StrCat("the call ended with status ",
                      static_cast<int>(call.status.error_code()), " '",
                      call.status.error_message(), "', expected ",
                      static_cast<int>(expected), " (",
                      static_cast<int>(grpc::StatusCode::DEADLINE_EXCEEDED),
                      " is a hang)"));
  }
  const size_t sent = call.sent.size();
  const size_t received = call.received.size();
  if (received > sent || (!call.cancelled && received != sent)) {
    Fail(absl::StrCat(received, " responses to ", sent, " requests",
                      call.cancelled ? " (cancelled)" : ""));
  }
  for (size_t i = 0; i < received; ++i) {
    std::string why = Mismatch(*call.sent[i], call.received[i]);
    if (!why.empty()) Fail(absl::StrCat("response ", i, ": ", why));
  }
}

// After a cancelled call: a new stream's one-row identity_fp32 request is
// answered with a success.
void CheckStillServing(GRPCInferenceService::Stub* stub) {
  std::vector<Step> probe(1);
  probe[0].action = Action::kSend;
  ModelInferRequest& request = probe[0].request;
  request.set_model_name(kFp32Model);
  request.set_id("probe");
  auto* input = request.add_inputs();
  input->set_name("x");
  input->set_datatype("FP32");
  input->add_shape(1);
  input->add_shape(4);
  const float row[4] = {1.0f, -2.0f, 0.5f, 4.0f};
  request.add_raw_input_contents(reinterpret_cast<const char*>(row),
                                 sizeof(row));
  CallResult call = RunScript(stub, probe);
  CheckCall(call);
  if (call.received.size() != 1 || !call.received[0].error_message().empty()) {
    Fail(absl::StrCat("after a cancelled call a new one failed: ",
                      call.received.empty()
                          ? "no response"
                          : call.received[0].error_message()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* const harness = new Harness();
  const std::vector<Step> script = ParseScript(data, size);
  const CallResult call = RunScript(harness->stub(), script);
  CheckCall(call);
  if (call.cancelled) CheckStillServing(harness->stub());
  return 0;
}
