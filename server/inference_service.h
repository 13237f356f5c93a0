// InferenceService: the KServe v2 GRPCInferenceService as Triton speaks it.
// Each handler checks --grpc-restricted-protocol, calls the wire-neutral
// KServeService (kserve_service.h, shared with the HTTP frontend) and
// converts the status back; nothing else. RPCs not overridden here (trace
// and log settings) answer UNIMPLEMENTED through the generated base class.
#ifndef COALESCE_SERVER_INFERENCE_SERVICE_H_
#define COALESCE_SERVER_INFERENCE_SERVICE_H_

#include "proto/grpc_service.grpc.pb.h"
#include "server/kserve_service.h"
#include "server/server_options.h"
#include "server/stream_infer_reactor.h"

namespace coalesce {

class InferenceService final
    : public inference::GRPCInferenceService::CallbackService {
 public:
  // Reads --grpc-restricted-protocol and --grpc-stream-max-pending from
  // `options`. REQUIRES: `service` outlives this one.
  InferenceService(KServeService* service, const ServerOptions& options);

  // Shutdown, once queued requests are answered: open streams finish as
  // soon as theirs are (StreamRegistry::CloseAll).
  void CloseStreams() { streams_.CloseAll(); }

  using Context = grpc::CallbackServerContext;
  using Reactor = grpc::ServerUnaryReactor;

  Reactor* ServerLive(Context* c, const inference::ServerLiveRequest* req,
                      inference::ServerLiveResponse* resp) override;
  Reactor* ServerReady(Context* c, const inference::ServerReadyRequest* req,
                       inference::ServerReadyResponse* resp) override;
  Reactor* ModelReady(Context* c, const inference::ModelReadyRequest* req,
                      inference::ModelReadyResponse* resp) override;
  Reactor* ServerMetadata(Context* c,
                          const inference::ServerMetadataRequest* req,
                          inference::ServerMetadataResponse* resp) override;
  Reactor* ModelMetadata(Context* c, const inference::ModelMetadataRequest* req,
                         inference::ModelMetadataResponse* resp) override;
  Reactor* ModelConfig(Context* c, const inference::ModelConfigRequest* req,
                       inference::ModelConfigResponse* resp) override;
  Reactor* ModelStatistics(Context* c,
                           const inference::ModelStatisticsRequest* req,
                           inference::ModelStatisticsResponse* resp) override;
  Reactor* RepositoryIndex(Context* c,
                           const inference::RepositoryIndexRequest* req,
                           inference::RepositoryIndexResponse* resp) override;
  Reactor* RepositoryModelLoad(
      Context* c, const inference::RepositoryModelLoadRequest* req,
      inference::RepositoryModelLoadResponse* resp) override;
  Reactor* RepositoryModelUnload(
      Context* c, const inference::RepositoryModelUnloadRequest* req,
      inference::RepositoryModelUnloadResponse* resp) override;
  Reactor* SystemSharedMemoryStatus(
      Context* c, const inference::SystemSharedMemoryStatusRequest* req,
      inference::SystemSharedMemoryStatusResponse* resp) override;
  Reactor* SystemSharedMemoryRegister(
      Context* c, const inference::SystemSharedMemoryRegisterRequest* req,
      inference::SystemSharedMemoryRegisterResponse* resp) override;
  Reactor* SystemSharedMemoryUnregister(
      Context* c, const inference::SystemSharedMemoryUnregisterRequest* req,
      inference::SystemSharedMemoryUnregisterResponse* resp) override;
  Reactor* CudaSharedMemoryStatus(
      Context* c, const inference::CudaSharedMemoryStatusRequest* req,
      inference::CudaSharedMemoryStatusResponse* resp) override;
  Reactor* CudaSharedMemoryRegister(
      Context* c, const inference::CudaSharedMemoryRegisterRequest* req,
      inference::CudaSharedMemoryRegisterResponse* resp) override;
  Reactor* CudaSharedMemoryUnregister(
      Context* c, const inference::CudaSharedMemoryUnregisterRequest* req,
      inference::CudaSharedMemoryUnregisterResponse* resp) override;
  Reactor* ModelInfer(Context* c, const inference::ModelInferRequest* req,
                      inference::ModelInferResponse* resp) override;
  grpc::ServerBidiReactor<inference::ModelInferRequest,
                          inference::ModelStreamInferResponse>*
  ModelStreamInfer(Context* c) override;

 private:
  // OK, or Unavailable when `group` is restricted and the call lacks its
  // header (protocol_restrictions.h).
  absl::Status Allowed(Context* c, ProtocolGroup group) const;

  KServeService* const service_;
  StreamRegistry streams_;
  const ProtocolRestrictions restrictions_;
  const int64_t stream_max_pending_;  // --grpc-stream-max-pending
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_INFERENCE_SERVICE_H_
