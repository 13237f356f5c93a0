#include "server/inference_service.h"

#include "server/status_convert.h"
#include "server/stream_infer_reactor.h"
#include "server/unary_infer_reactor.h"

namespace coalesce {
namespace {

using Reactor = grpc::ServerUnaryReactor;

Reactor* Done(grpc::CallbackServerContext* context, const absl::Status& s) {
  Reactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

// A stream refused before it started: answers its status and goes away.
class RefusedStreamReactor
    : public grpc::ServerBidiReactor<inference::ModelInferRequest,
                                     inference::ModelStreamInferResponse> {
 public:
  explicit RefusedStreamReactor(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

InferenceService::InferenceService(KServeService* service,
                                   const ServerOptions& options)
    : service_(service),
      restrictions_(options.grpc_restricted_protocols),
      stream_max_pending_(options.grpc_stream_max_pending) {}

Reactor* InferenceService::ServerLive(Context* c,
                                      const inference::ServerLiveRequest*,
                                      inference::ServerLiveResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kHealth); !s.ok()) {
    return Done(c, s);
  }
  resp->set_live(service_->ServerLive());
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::ServerReady(Context* c,
                                       const inference::ServerReadyRequest*,
                                       inference::ServerReadyResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kHealth); !s.ok()) {
    return Done(c, s);
  }
  resp->set_ready(service_->ServerReady());
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::ModelReady(Context* c,
                                      const inference::ModelReadyRequest* req,
                                      inference::ModelReadyResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kHealth); !s.ok()) {
    return Done(c, s);
  }
  resp->set_ready(service_->ModelReady(req->name(), req->version()));
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::ServerMetadata(
    Context* c, const inference::ServerMetadataRequest*,
    inference::ServerMetadataResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kMetadata); !s.ok()) {
    return Done(c, s);
  }
  service_->ServerMetadata(resp);
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::ModelMetadata(
    Context* c, const inference::ModelMetadataRequest* req,
    inference::ModelMetadataResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kMetadata); !s.ok()) {
    return Done(c, s);
  }
  return Done(c, service_->ModelMetadata(*req, resp));
}

Reactor* InferenceService::ModelConfig(Context* c,
                                       const inference::ModelConfigRequest* req,
                                       inference::ModelConfigResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kModelConfig); !s.ok()) {
    return Done(c, s);
  }
  return Done(c, service_->ModelConfig(*req, resp));
}

Reactor* InferenceService::ModelStatistics(
    Context* c, const inference::ModelStatisticsRequest* req,
    inference::ModelStatisticsResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kStatistics); !s.ok()) {
    return Done(c, s);
  }
  return Done(c, service_->ModelStatistics(*req, resp));
}

Reactor* InferenceService::RepositoryIndex(
    Context* c, const inference::RepositoryIndexRequest* req,
    inference::RepositoryIndexResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kModelRepository); !s.ok()) {
    return Done(c, s);
  }
  service_->RepositoryIndex(*req, resp);
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::RepositoryModelLoad(
    Context* c, const inference::RepositoryModelLoadRequest* req,
    inference::RepositoryModelLoadResponse*) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kModelRepository); !s.ok()) {
    return Done(c, s);
  }
  // Loading blocks this callback thread for the load's duration.
  return Done(c, service_->RepositoryModelLoad(*req));
}

Reactor* InferenceService::RepositoryModelUnload(
    Context* c, const inference::RepositoryModelUnloadRequest* req,
    inference::RepositoryModelUnloadResponse*) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kModelRepository); !s.ok()) {
    return Done(c, s);
  }
  return Done(c, service_->RepositoryModelUnload(*req));
}

Reactor* InferenceService::SystemSharedMemoryStatus(
    Context* c, const inference::SystemSharedMemoryStatusRequest* req,
    inference::SystemSharedMemoryStatusResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kSharedMemory); !s.ok()) {
    return Done(c, s);
  }
  return Done(c, service_->SystemSharedMemoryStatus(*req, resp));
}

Reactor* InferenceService::SystemSharedMemoryRegister(
    Context* c, const inference::SystemSharedMemoryRegisterRequest* req,
    inference::SystemSharedMemoryRegisterResponse*) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kSharedMemory); !s.ok()) {
    return Done(c, s);
  }
  return Done(c, service_->SystemSharedMemoryRegister(*req));
}

Reactor* InferenceService::SystemSharedMemoryUnregister(
    Context* c, const inference::SystemSharedMemoryUnregisterRequest* req,
    inference::SystemSharedMemoryUnregisterResponse*) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kSharedMemory); !s.ok()) {
    return Done(c, s);
  }
  service_->SystemSharedMemoryUnregister(*req);
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::CudaSharedMemoryStatus(
    Context* c, const inference::CudaSharedMemoryStatusRequest* req,
    inference::CudaSharedMemoryStatusResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kSharedMemory); !s.ok()) {
    return Done(c, s);
  }
  return Done(c, service_->CudaSharedMemoryStatus(*req, resp));
}

Reactor* InferenceService::CudaSharedMemoryRegister(
    Context* c, const inference::CudaSharedMemoryRegisterRequest* req,
    inference::CudaSharedMemoryRegisterResponse*) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kSharedMemory); !s.ok()) {
    return Done(c, s);
  }
  return Done(c, service_->CudaSharedMemoryRegister(*req));
}

Reactor* InferenceService::CudaSharedMemoryUnregister(
    Context* c, const inference::CudaSharedMemoryUnregisterRequest* req,
    inference::CudaSharedMemoryUnregisterResponse*) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kSharedMemory); !s.ok()) {
    return Done(c, s);
  }
  service_->CudaSharedMemoryUnregister(*req);
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::ModelInfer(Context* c,
                                      const inference::ModelInferRequest* req,
                                      inference::ModelInferResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kInference); !s.ok()) {
    return Done(c, s);
  }
  // gRPC calls OnDone (which deletes the reactor) only after this handler
  // has returned it, so the reactor stays valid here even if the request
  // already finished on another thread.
  auto* reactor = new UnaryInferReactor();
  std::shared_ptr<ServedModel> model = service_->handler()->Submit(
      *req, c->deadline(),
      std::make_unique<UnaryResponseSink>(c, reactor, resp));
  reactor->cancel_notifier()->Add(model);
  if (model != nullptr && c->IsCancelled()) model->batcher->NotifyCancelled();
  return reactor;
}

grpc::ServerBidiReactor<inference::ModelInferRequest,
                        inference::ModelStreamInferResponse>*
InferenceService::ModelStreamInfer(Context* c) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kInference); !s.ok()) {
    return new RefusedStreamReactor(ToGrpcStatus(s));
  }
  return new StreamInferReactor(c, service_->handler(), &streams_,
                                stream_max_pending_);
}

absl::Status InferenceService::Allowed(Context* c, ProtocolGroup group) const {
  return restrictions_.Check(
      group, [c](absl::string_view key) -> std::optional<absl::string_view> {
        const auto& metadata = c->client_metadata();
        auto it = metadata.find(grpc::string_ref(key.data(), key.size()));
        if (it == metadata.end()) return std::nullopt;
        return absl::string_view(it->second.data(), it->second.size());
      });
}

}  // namespace coalesce
