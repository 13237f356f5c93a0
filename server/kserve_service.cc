#include "server/kserve_service.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "server/statistics_proto.h"

namespace coalesce {
namespace {

// The server's name and version in ServerMetadata. The name is Triton's:
// Triton's own client examples (simple_{grpc,http}_health_metadata) check
// it, and the mission is that Triton's clients work unchanged. The server
// says what it is elsewhere: the HTTP Server header, coalesce_build_info,
// the log (docs/server.md).
constexpr char kServerName[] = "triton";
constexpr char kServerVersion[] = "0.1.0";
// Protocol extensions this server implements (and only those).
constexpr const char* kExtensions[] = {
    "classification",      "model_repository",
    "model_configuration", "system_shared_memory",
    "cuda_shared_memory",  "binary_tensor_data",
    "schedule_policy",     "sequence",
    "parameters",          "statistics"};

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

// Override file paths whose components the file system can hold. Internal
// and "failed to poll from model repository", as Triton answers (its model
// control example checks both).
absl::Status CheckFileNames(const LoadOverrides& overrides) {
  for (const auto& [path, contents] : overrides.files) {
    for (absl::string_view part : absl::StrSplit(path, '/')) {
      if (part.size() > NAME_MAX) {
        return absl::InternalError(absl::StrCat(
            "failed to poll from model repository: override file 'file:",
            absl::string_view(path).substr(0, 64),
            "...' has a path component longer than NAME_MAX (", NAME_MAX,
            " bytes)"));
      }
    }
  }
  return absl::OkStatus();
}

// System and CUDA regions share one name space: requests name either.
absl::Status RegionNameTaken(const std::string& name) {
  return absl::AlreadyExistsError(absl::StrCat(
      "shared memory region '", name,
      "' is already registered (system and CUDA regions share names)"));
}

}  // namespace

KServeService::KServeService(ModelManager* manager, Clock* clock,
                             const ServerOptions& options)
    : manager_(manager),
      budget_(options.max_inflight_bytes),
      handler_(manager, clock, &shared_memory_, &budget_),
      mode_(options.model_control_mode) {
  shared_memory_.set_cuda_regions(&cuda_shared_memory_);
}

bool KServeService::ServerLive() const { return manager_->Unhealthy().empty(); }

bool KServeService::ServerReady() const {
  return ready_.load() && manager_->Unhealthy().empty();
}

bool KServeService::ModelReady(const std::string& name,
                               const std::string& version) const {
  absl::StatusOr<std::shared_ptr<ServedModel>> served =
      manager_->Find(name, version);
  return ready_.load() && served.ok() && (*served)->batcher->Health().ok();
}

void KServeService::ServerMetadata(
    inference::ServerMetadataResponse* resp) const {
  resp->set_name(kServerName);
  resp->set_version(kServerVersion);
  for (const char* extension : kExtensions) resp->add_extensions(extension);
}

absl::Status KServeService::ModelMetadata(
    const inference::ModelMetadataRequest& req,
    inference::ModelMetadataResponse* resp) const {
  auto served = manager_->Find(req.name(), req.version());
  if (!served.ok()) return served.status();
  auto versions = manager_->Served(req.name());
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
  return absl::OkStatus();
}

absl::Status KServeService::ModelConfig(
    const inference::ModelConfigRequest& req,
    inference::ModelConfigResponse* resp) const {
  auto served = manager_->Find(req.name(), req.version());
  if (!served.ok()) return served.status();
  *resp->mutable_config() = (*served)->config;
  return absl::OkStatus();
}

absl::Status KServeService::ModelStatistics(
    const inference::ModelStatisticsRequest& req,
    inference::ModelStatisticsResponse* resp) const {
  if (!req.version().empty()) {
    auto served = manager_->Find(req.name(), req.version());
    if (!served.ok()) return served.status();
    FillModelStatistics(**served, resp->add_model_stats());
    return absl::OkStatus();
  }
  auto served = manager_->Served(req.name());
  if (!served.ok()) return served.status();
  for (const auto& model : *served) {
    FillModelStatistics(*model, resp->add_model_stats());
  }
  return absl::OkStatus();
}

void KServeService::RepositoryIndex(
    const inference::RepositoryIndexRequest& req,
    inference::RepositoryIndexResponse* resp) const {
  for (const ModelIndexEntry& entry : manager_->Index(req.ready())) {
    auto* model = resp->add_models();
    model->set_name(entry.name);
    model->set_version(entry.version);
    model->set_state(std::string(ModelStateName(entry.state)));
    model->set_reason(entry.reason);
  }
}

absl::Status KServeService::RepositoryModelLoad(
    const inference::RepositoryModelLoadRequest& req) {
  if (mode_ != ModelControlMode::kExplicit) {
    return absl::UnavailableError(
        "model load needs --model-control-mode explicit");
  }
  // Worded as Triton words it ("failed to load"): its model control
  // examples look for it.
  auto failed = [&req](const absl::Status& s) {
    return absl::Status(
        s.code(),
        absl::StrCat("failed to load '", req.model_name(), "': ", s.message()));
  };
  auto overrides = LoadOverridesOf(req);
  if (!overrides.ok()) return failed(overrides.status());
  if (absl::Status s = CheckFileNames(*overrides); !s.ok()) return failed(s);
  absl::Status loaded = manager_->Load(req.model_name(), *overrides);
  return loaded.ok() ? loaded : failed(loaded);
}

absl::Status KServeService::RepositoryModelUnload(
    const inference::RepositoryModelUnloadRequest& req) {
  if (mode_ != ModelControlMode::kExplicit) {
    return absl::UnavailableError(
        "model unload needs --model-control-mode explicit");
  }
  // Only ensembles have dependents (the models they compose), and ensembles
  // are refused at load, so `unload_dependents` never has more to unload.
  auto dependents = req.parameters().find("unload_dependents");
  if (dependents != req.parameters().end() &&
      !dependents->second.has_bool_param()) {
    return absl::InvalidArgumentError(
        "parameter 'unload_dependents' must be a bool");
  }
  return manager_->Unload(req.model_name());
}

absl::Status KServeService::SystemSharedMemoryStatus(
    const inference::SystemSharedMemoryStatusRequest& req,
    inference::SystemSharedMemoryStatusResponse* resp) const {
  auto regions = shared_memory_.Status(req.name());
  if (!regions.ok()) return regions.status();
  for (const SharedMemoryRegionInfo& r : *regions) {
    auto& status = (*resp->mutable_regions())[r.name];
    status.set_name(r.name);
    status.set_key(r.key);
    status.set_offset(r.offset);
    status.set_byte_size(r.byte_size);
  }
  return absl::OkStatus();
}

absl::Status KServeService::SystemSharedMemoryRegister(
    const inference::SystemSharedMemoryRegisterRequest& req) {
  if (cuda_shared_memory_.Status(req.name()).ok()) {
    return RegionNameTaken(req.name());
  }
  return shared_memory_.Register(req.name(), req.key(), req.offset(),
                                 req.byte_size());
}

void KServeService::SystemSharedMemoryUnregister(
    const inference::SystemSharedMemoryUnregisterRequest& req) {
  shared_memory_.Unregister(req.name());
}

absl::Status KServeService::CudaSharedMemoryStatus(
    const inference::CudaSharedMemoryStatusRequest& req,
    inference::CudaSharedMemoryStatusResponse* resp) const {
  auto regions = cuda_shared_memory_.Status(req.name());
  if (!regions.ok()) return regions.status();
  for (const CudaSharedMemoryRegionInfo& r : *regions) {
    auto& status = (*resp->mutable_regions())[r.name];
    status.set_name(r.name);
    status.set_device_id(static_cast<uint64_t>(r.device_id));
    status.set_byte_size(r.byte_size);
  }
  return absl::OkStatus();
}

absl::Status KServeService::CudaSharedMemoryRegister(
    const inference::CudaSharedMemoryRegisterRequest& req) {
  if (shared_memory_.Status(req.name()).ok()) {
    return RegionNameTaken(req.name());
  }
  return cuda_shared_memory_.Register(req.name(), req.raw_handle(),
                                      req.device_id(), req.byte_size());
}

void KServeService::CudaSharedMemoryUnregister(
    const inference::CudaSharedMemoryUnregisterRequest& req) {
  cuda_shared_memory_.Unregister(req.name());
}

}  // namespace coalesce
