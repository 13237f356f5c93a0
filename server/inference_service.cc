#include "server/inference_service.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "server/statistics_proto.h"
#include "server/status_convert.h"
#include "server/stream_infer_reactor.h"
#include "server/unary_infer_reactor.h"

namespace coalesce {
namespace {

using Reactor = grpc::ServerUnaryReactor;

// The server's name and version in ServerMetadata.
constexpr char kServerName[] = "coalesce";
constexpr char kServerVersion[] = "0.1.0";
// Protocol extensions this server implements (and only those).
constexpr const char* kExtensions[] = {
    "classification",      "model_repository",
    "model_configuration", "system_shared_memory",
    "schedule_policy",     "parameters",
    "statistics"};

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

void FillTensorMetadata(bool batching, const std::string& name,
                        inference::DataType type,
                        const google::protobuf::RepeatedField<int64_t>& dims,
                        inference::ModelMetadataResponse::TensorMetadata* out) {
  out->set_name(name);
  out->set_datatype(std::string(DataTypeName(static_cast<DataType>(type))));
  if (batching) out->add_shape(-1);
  for (int64_t d : dims) out->add_shape(d);
}

// Upper bounds of what a load request may carry.
constexpr size_t kMaxConfigOverrideBytes = 1 << 20;
constexpr size_t kMaxOverrideFileBytes = size_t{1} << 30;

// RepositoryModelLoad's parameters: `config` (a ModelConfig as JSON) and
// `file:<path>` contents, as Triton takes them.
absl::StatusOr<LoadOverrides> LoadOverridesOf(
    const inference::RepositoryModelLoadRequest& req) {
  LoadOverrides overrides;
  size_t file_bytes = 0;
  for (const auto& [key, value] : req.parameters()) {
    if (key == "config") {
      if (!value.has_string_param()) {
        return absl::InvalidArgumentError(
            "load parameter 'config' must be a string (the config as JSON)");
      }
      if (value.string_param().size() > kMaxConfigOverrideBytes) {
        return absl::InvalidArgumentError(
            "load parameter 'config' is larger than 1 MiB");
      }
      inference::ModelConfig config;
      auto parsed = google::protobuf::util::JsonStringToMessage(
          value.string_param(), &config);
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "load parameter 'config' is not a model config in JSON: ",
            std::string(parsed.message())));
      }
      overrides.config = std::move(config);
    } else if (key.starts_with("file:")) {
      if (!value.has_bytes_param()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "load parameter '", key, "' must carry the file as bytes"));
      }
      file_bytes += value.bytes_param().size();
      if (file_bytes > kMaxOverrideFileBytes) {
        return absl::InvalidArgumentError(
            "override files are larger than 1 GiB in all");
      }
      overrides.files[key.substr(5)] = value.bytes_param();
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown load parameter '", key, "'"));
    }
  }
  if (!overrides.files.empty() && !overrides.config) {
    return absl::InvalidArgumentError(
        "override files need the 'config' load parameter too");
  }
  return overrides;
}

// System and CUDA regions share one name space: requests name either.
absl::Status RegionNameTaken(const std::string& name) {
  return absl::AlreadyExistsError(absl::StrCat(
      "shared memory region '", name,
      "' is already registered (system and CUDA regions share names)"));
}

}  // namespace

InferenceService::InferenceService(ModelManager* manager, Clock* clock,
                                   const ServerOptions& options)
    : manager_(manager),
      budget_(options.max_inflight_bytes),
      handler_(manager, clock, &shared_memory_, &budget_),
      mode_(options.model_control_mode),
      restrictions_(options.grpc_restricted_protocols),
      stream_max_pending_(options.grpc_stream_max_pending) {
  shared_memory_.set_cuda_regions(&cuda_shared_memory_);
}

Reactor* InferenceService::ServerLive(Context* c,
                                      const inference::ServerLiveRequest*,
                                      inference::ServerLiveResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kHealth); !s.ok()) {
    return Done(c, s);
  }
  resp->set_live(true);
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::ServerReady(Context* c,
                                       const inference::ServerReadyRequest*,
                                       inference::ServerReadyResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kHealth); !s.ok()) {
    return Done(c, s);
  }
  // Triton's strict readiness: every loaded model can serve.
  resp->set_ready(ready_.load() && manager_->Unhealthy().empty());
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::ModelReady(Context* c,
                                      const inference::ModelReadyRequest* req,
                                      inference::ModelReadyResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kHealth); !s.ok()) {
    return Done(c, s);
  }
  absl::StatusOr<std::shared_ptr<ServedModel>> served =
      manager_->Find(req->name(), req->version());
  resp->set_ready(ready_.load() && served.ok() &&
                  (*served)->batcher->Health().ok());
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::ServerMetadata(
    Context* c, const inference::ServerMetadataRequest*,
    inference::ServerMetadataResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kMetadata); !s.ok()) {
    return Done(c, s);
  }
  resp->set_name(kServerName);
  resp->set_version(kServerVersion);
  for (const char* extension : kExtensions) resp->add_extensions(extension);
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::ModelMetadata(
    Context* c, const inference::ModelMetadataRequest* req,
    inference::ModelMetadataResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kMetadata); !s.ok()) {
    return Done(c, s);
  }
  auto served = manager_->Find(req->name(), req->version());
  if (!served.ok()) return Done(c, served.status());
  auto versions = manager_->Served(req->name());
  if (versions.ok()) {
    for (const auto& v : *versions) {
      resp->add_versions(std::to_string(v->version));
    }
  }
  const inference::ModelConfig& config = (*served)->config;
  const bool batching = config.max_batch_size() > 0;
  resp->set_name(config.name());
  resp->set_platform(config.platform());
  for (const auto& input : config.input()) {
    FillTensorMetadata(batching, input.name(), input.data_type(), input.dims(),
                       resp->add_inputs());
  }
  for (const auto& output : config.output()) {
    FillTensorMetadata(batching, output.name(), output.data_type(),
                       output.dims(), resp->add_outputs());
  }
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::ModelConfig(Context* c,
                                       const inference::ModelConfigRequest* req,
                                       inference::ModelConfigResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kModelConfig); !s.ok()) {
    return Done(c, s);
  }
  auto served = manager_->Find(req->name(), req->version());
  if (!served.ok()) return Done(c, served.status());
  *resp->mutable_config() = (*served)->config;
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::ModelStatistics(
    Context* c, const inference::ModelStatisticsRequest* req,
    inference::ModelStatisticsResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kStatistics); !s.ok()) {
    return Done(c, s);
  }
  if (!req->version().empty()) {
    auto served = manager_->Find(req->name(), req->version());
    if (!served.ok()) return Done(c, served.status());
    FillModelStatistics(**served, resp->add_model_stats());
    return Done(c, absl::OkStatus());
  }
  auto served = manager_->Served(req->name());
  if (!served.ok()) return Done(c, served.status());
  for (const auto& model : *served) {
    FillModelStatistics(*model, resp->add_model_stats());
  }
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::RepositoryIndex(
    Context* c, const inference::RepositoryIndexRequest* req,
    inference::RepositoryIndexResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kModelRepository); !s.ok()) {
    return Done(c, s);
  }
  for (const ModelIndexEntry& entry : manager_->Index(req->ready())) {
    auto* model = resp->add_models();
    model->set_name(entry.name);
    model->set_version(entry.version);
    model->set_state(std::string(ModelStateName(entry.state)));
    model->set_reason(entry.reason);
  }
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::RepositoryModelLoad(
    Context* c, const inference::RepositoryModelLoadRequest* req,
    inference::RepositoryModelLoadResponse*) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kModelRepository); !s.ok()) {
    return Done(c, s);
  }
  if (mode_ != ModelControlMode::kExplicit) {
    return Done(c, absl::UnavailableError(
                       "model load needs --model-control-mode explicit"));
  }
  auto overrides = LoadOverridesOf(*req);
  if (!overrides.ok()) return Done(c, overrides.status());
  // Loading blocks this callback thread for the load's duration.
  return Done(c, manager_->Load(req->model_name(), *overrides));
}

Reactor* InferenceService::RepositoryModelUnload(
    Context* c, const inference::RepositoryModelUnloadRequest* req,
    inference::RepositoryModelUnloadResponse*) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kModelRepository); !s.ok()) {
    return Done(c, s);
  }
  if (mode_ != ModelControlMode::kExplicit) {
    return Done(c, absl::UnavailableError(
                       "model unload needs --model-control-mode explicit"));
  }
  // Only ensembles have dependents (the models they compose), and ensembles
  // are refused at load, so `unload_dependents` never has more to unload.
  auto dependents = req->parameters().find("unload_dependents");
  if (dependents != req->parameters().end() &&
      !dependents->second.has_bool_param()) {
    return Done(c, absl::InvalidArgumentError(
                       "parameter 'unload_dependents' must be a bool"));
  }
  return Done(c, manager_->Unload(req->model_name()));
}

Reactor* InferenceService::SystemSharedMemoryStatus(
    Context* c, const inference::SystemSharedMemoryStatusRequest* req,
    inference::SystemSharedMemoryStatusResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kSharedMemory); !s.ok()) {
    return Done(c, s);
  }
  auto regions = shared_memory_.Status(req->name());
  if (!regions.ok()) return Done(c, regions.status());
  for (const SharedMemoryRegionInfo& r : *regions) {
    auto& status = (*resp->mutable_regions())[r.name];
    status.set_name(r.name);
    status.set_key(r.key);
    status.set_offset(r.offset);
    status.set_byte_size(r.byte_size);
  }
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::SystemSharedMemoryRegister(
    Context* c, const inference::SystemSharedMemoryRegisterRequest* req,
    inference::SystemSharedMemoryRegisterResponse*) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kSharedMemory); !s.ok()) {
    return Done(c, s);
  }
  if (cuda_shared_memory_.Status(req->name()).ok()) {
    return Done(c, RegionNameTaken(req->name()));
  }
  return Done(c, shared_memory_.Register(req->name(), req->key(), req->offset(),
                                         req->byte_size()));
}

Reactor* InferenceService::SystemSharedMemoryUnregister(
    Context* c, const inference::SystemSharedMemoryUnregisterRequest* req,
    inference::SystemSharedMemoryUnregisterResponse*) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kSharedMemory); !s.ok()) {
    return Done(c, s);
  }
  shared_memory_.Unregister(req->name());
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::CudaSharedMemoryStatus(
    Context* c, const inference::CudaSharedMemoryStatusRequest* req,
    inference::CudaSharedMemoryStatusResponse* resp) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kSharedMemory); !s.ok()) {
    return Done(c, s);
  }
  auto regions = cuda_shared_memory_.Status(req->name());
  if (!regions.ok()) return Done(c, regions.status());
  for (const CudaSharedMemoryRegionInfo& r : *regions) {
    auto& status = (*resp->mutable_regions())[r.name];
    status.set_name(r.name);
    status.set_device_id(static_cast<uint64_t>(r.device_id));
    status.set_byte_size(r.byte_size);
  }
  return Done(c, absl::OkStatus());
}

Reactor* InferenceService::CudaSharedMemoryRegister(
    Context* c, const inference::CudaSharedMemoryRegisterRequest* req,
    inference::CudaSharedMemoryRegisterResponse*) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kSharedMemory); !s.ok()) {
    return Done(c, s);
  }
  if (shared_memory_.Status(req->name()).ok()) {
    return Done(c, RegionNameTaken(req->name()));
  }
  return Done(c,
              cuda_shared_memory_.Register(req->name(), req->raw_handle(),
                                           req->device_id(), req->byte_size()));
}

Reactor* InferenceService::CudaSharedMemoryUnregister(
    Context* c, const inference::CudaSharedMemoryUnregisterRequest* req,
    inference::CudaSharedMemoryUnregisterResponse*) {
  if (absl::Status s = Allowed(c, ProtocolGroup::kSharedMemory); !s.ok()) {
    return Done(c, s);
  }
  cuda_shared_memory_.Unregister(req->name());
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
  std::shared_ptr<ServedModel> model =
      handler_.Submit(*req, c->deadline(),
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
  return new StreamInferReactor(c, &handler_, &streams_, stream_max_pending_);
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
