#include "benchmarks/coalesce_bench/grpc_infer_sender.h"

#include <climits>
#include <memory>
#include <utility>
#include <vector>

namespace coalesce::bench {

std::shared_ptr<grpc::Channel> CreateBenchChannel(const std::string& url,
                                                  int index) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT_MAX);
  args.SetMaxSendMessageSize(INT_MAX);
  // A distinct argument makes the channel's subchannel key unique, and the
  // local pool keeps it out of the process-wide one: one connection each.
  args.SetInt("coalesce_bench.channel_index", index);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(url, grpc::InsecureChannelCredentials(),
                                   args);
}

absl::Status ToAbslStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

// One request in flight: lives from Send until its completion callback.
struct GrpcInferSender::Call {
  grpc::ClientContext context;
  inference::ModelInferResponse response;
  Done done;
};

GrpcInferSender::GrpcInferSender(const Options& options,
                                 inference::ModelInferRequest request)
    : GrpcInferSender(
          options,
          std::make_shared<const RequestPool>(
              std::vector<inference::ModelInferRequest>{std::move(request)})) {}

GrpcInferSender::GrpcInferSender(const Options& options,
                                 std::shared_ptr<const RequestPool> pool)
    : timeout_(options.timeout), pool_(std::move(pool)) {
  for (int i = 0; i < options.channels; ++i) {
    stubs_.push_back(inference::GRPCInferenceService::NewStub(
        CreateBenchChannel(options.url, i)));
  }
}

void GrpcInferSender::Send(int lane, Done done) {
  auto* call = new Call;
  call->done = std::move(done);
  call->context.set_deadline(std::chrono::system_clock::now() + timeout_);
  auto* stub = stubs_[static_cast<size_t>(lane) % stubs_.size()].get();
  // The pool never changes and outlives the call (see the class comment).
  const inference::ModelInferRequest* request = &pool_->Next();
  stub->async()->ModelInfer(&call->context, request, &call->response,
                            [call](grpc::Status status) {
                              // The call (its context holds a reference to
                              // the channel) is gone before anyone hears of
                              // the completion: once every request is
                              // reported done, destroying the sender drops
                              // the last channel reference.
                              Done done = std::move(call->done);
                              delete call;
                              done(ToAbslStatus(status));
                            });
}

}  // namespace coalesce::bench
