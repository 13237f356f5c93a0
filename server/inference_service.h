// InferenceService: the KServe v2 GRPCInferenceService as Triton speaks it.
// Each handler converts the message, calls the ModelManager / InferHandler,
// and converts the status back; nothing else. RPCs not overridden here
// (shared memory, trace and log settings) answer UNIMPLEMENTED through the
// generated base class.
#ifndef COALESCE_SERVER_INFERENCE_SERVICE_H_
#define COALESCE_SERVER_INFERENCE_SERVICE_H_

#include <atomic>

#include "batching/clock.h"
#include "proto/grpc_service.grpc.pb.h"
#include "server/cuda_shared_memory.h"
#include "server/infer_handler.h"
#include "server/inflight_budget.h"
#include "server/model_manager.h"
#include "server/server_options.h"
#include "server/stream_infer_reactor.h"

namespace coalesce {

class InferenceService final
    : public inference::GRPCInferenceService::CallbackService {
 public:
  // Reads the model control mode, --max-inflight-bytes and
  // --grpc-restricted-protocol from `options`.
  // REQUIRES: manager and clock outlive the service.
  InferenceService(ModelManager* manager, Clock* clock,
                   const ServerOptions& options);

  // Readiness as ServerReady reports it; false once shutdown has begun.
  void set_ready(bool ready) { ready_.store(ready); }

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

  ModelManager* const manager_;
  SharedMemoryManager shared_memory_;  // before handler_, which uses it
  CudaSharedMemoryRegistry cuda_shared_memory_;
  InflightBudget budget_;  // before handler_, which uses it
  InferHandler handler_;
  StreamRegistry streams_;
  const ModelControlMode mode_;
  const ProtocolRestrictions restrictions_;
  const int64_t stream_max_pending_;  // --grpc-stream-max-pending
  std::atomic<bool> ready_{false};
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_INFERENCE_SERVICE_H_
