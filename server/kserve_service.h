// KServeService: the KServe v2 protocol's operations, independent of the
// wire. The gRPC frontend (inference_service.h) and the HTTP frontend
// (http_frontend.h) both translate their requests into these calls, so the
// two answer the same questions the same way, share one shared-memory
// registry and one in-flight byte budget, and hand inference requests to
// the same InferHandler (decoder, validator, batcher).
//
// Each call takes the protocol's request message, fills its response
// message and returns the status to answer with (an absl code that each
// frontend maps to its own: gRPC code, HTTP status). Access restrictions
// are the frontends' business (their headers differ). Thread-safe.
#ifndef COALESCE_SERVER_KSERVE_SERVICE_H_
#define COALESCE_SERVER_KSERVE_SERVICE_H_

#include <atomic>
#include <string>

#include "absl/status/status.h"
#include "batching/clock.h"
#include "proto/grpc_service.pb.h"
#include "server/cuda_shared_memory.h"
#include "server/infer_handler.h"
#include "server/inflight_budget.h"
#include "server/model_manager.h"
#include "server/server_options.h"
#include "server/shared_memory.h"

namespace coalesce {

class KServeService {
 public:
  // Reads the model control mode and --max-inflight-bytes from `options`.
  // REQUIRES: manager and clock outlive the service.
  KServeService(ModelManager* manager, Clock* clock,
                const ServerOptions& options);

  // Readiness as ServerReady reports it; false once shutdown has begun.
  void set_ready(bool ready) { ready_.store(ready); }

  // Liveness: false once a model has no healthy instance. Instances fail
  // only on sticky device faults (docs/server.md, "Instance health"),
  // which poison the device context for the life of the process, so
  // nothing short of a restart brings such a model back; a liveness probe
  // that fails gets the pod restarted.
  bool ServerLive() const;
  // Triton's strict readiness: every loaded model can serve.
  bool ServerReady() const;
  bool ModelReady(const std::string& name, const std::string& version) const;

  void ServerMetadata(inference::ServerMetadataResponse* resp) const;
  absl::Status ModelMetadata(const inference::ModelMetadataRequest& req,
                             inference::ModelMetadataResponse* resp) const;
  absl::Status ModelConfig(const inference::ModelConfigRequest& req,
                           inference::ModelConfigResponse* resp) const;
  absl::Status ModelStatistics(const inference::ModelStatisticsRequest& req,
                               inference::ModelStatisticsResponse* resp) const;
  void RepositoryIndex(const inference::RepositoryIndexRequest& req,
                       inference::RepositoryIndexResponse* resp) const;
  // Blocks the calling thread for the load's duration.
  absl::Status RepositoryModelLoad(
      const inference::RepositoryModelLoadRequest& req);
  absl::Status RepositoryModelUnload(
      const inference::RepositoryModelUnloadRequest& req);

  absl::Status SystemSharedMemoryStatus(
      const inference::SystemSharedMemoryStatusRequest& req,
      inference::SystemSharedMemoryStatusResponse* resp) const;
  absl::Status SystemSharedMemoryRegister(
      const inference::SystemSharedMemoryRegisterRequest& req);
  void SystemSharedMemoryUnregister(
      const inference::SystemSharedMemoryUnregisterRequest& req);
  absl::Status CudaSharedMemoryStatus(
      const inference::CudaSharedMemoryStatusRequest& req,
      inference::CudaSharedMemoryStatusResponse* resp) const;
  absl::Status CudaSharedMemoryRegister(
      const inference::CudaSharedMemoryRegisterRequest& req);
  void CudaSharedMemoryUnregister(
      const inference::CudaSharedMemoryUnregisterRequest& req);

  // Inference: both frontends submit through this one handler.
  InferHandler* handler() { return &handler_; }

 private:
  ModelManager* const manager_;
  SharedMemoryManager shared_memory_;  // before handler_, which uses it
  CudaSharedMemoryRegistry cuda_shared_memory_;
  InflightBudget budget_;  // before handler_, which uses it
  InferHandler handler_;
  const ModelControlMode mode_;
  std::atomic<bool> ready_{false};
};

}  // namespace coalesce

#endif  // COALESCE_SERVER_KSERVE_SERVICE_H_
