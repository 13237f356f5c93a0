#include "server/model_config_completion.h"

#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/reshape_instance.h"
#include "server/sequence_config.h"

namespace coalesce {
namespace {

using inference::ModelConfig;

bool StartsWithVariableDim(const TensorSpec& spec) {
  return !spec.dims.empty() && spec.dims[0] == -1;
}

bool ModelLooksBatched(const ModelSignature& signature) {
  for (const auto* list : {&signature.inputs, &signature.outputs}) {
    for (const TensorSpec& spec : *list) {
      if (!StartsWithVariableDim(spec)) return false;
    }
  }
  return !signature.inputs.empty();
}

void AutoCompleteBatching(const ModelSignature& signature,
                          ModelConfig* config) {
  if (config->input_size() != 0 || config->output_size() != 0 ||
      config->max_batch_size() != 0 || !ModelLooksBatched(signature)) {
    return;
  }
  config->set_max_batch_size(kAutoMaxBatchSize);
  if (config->scheduling_choice_case() ==
      ModelConfig::SCHEDULING_CHOICE_NOT_SET) {
    config->mutable_dynamic_batching();
  }
}

std::string Names(const std::vector<TensorSpec>& specs) {
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  return absl::StrJoin(names, ", ");
}

// The model's dims as the config states them: without the batch dimension
// when the model batches.
absl::StatusOr<Shape> ConfigDimsOf(const TensorSpec& spec, bool batching,
                                   const char* kind) {
  if (!batching) return spec.dims;
  if (!StartsWithVariableDim(spec)) {
    return absl::InvalidArgumentError(absl::StrCat(
        kind, " '", spec.name, "' has shape ", ShapeToString(spec.dims),
        " in the model, but max_batch_size > 0 needs a variable first "
        "(batch) dimension"));
  }
  return Shape(spec.dims.begin() + 1, spec.dims.end());
}

// A config dim may fix a dimension the model leaves variable, not the reverse
// of a fixed model dimension.
absl::Status CheckDims(const std::string& name, const char* kind,
                       const Shape& model_dims, const Shape& config_dims) {
  bool ok = model_dims.size() == config_dims.size();
  for (size_t i = 0; ok && i < model_dims.size(); ++i) {
    ok = model_dims[i] == -1 || model_dims[i] == config_dims[i];
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      kind, " '", name, "': config dims ", ShapeToString(config_dims),
      " do not match the model's ", ShapeToString(model_dims),
      " (dims exclude the batch dimension when max_batch_size > 0)"));
}

template <typename TensorConfig>
absl::Status CompleteTensor(const TensorSpec& spec, bool batching,
                            const char* kind, TensorConfig* tensor) {
  auto model_dims = ConfigDimsOf(spec, batching, kind);
  if (!model_dims.ok()) return model_dims.status();
  const auto model_type = static_cast<inference::DataType>(spec.dtype);
  if (tensor->data_type() == inference::TYPE_INVALID) {
    tensor->set_data_type(model_type);
  } else if (tensor->data_type() != model_type) {
    return absl::InvalidArgumentError(absl::StrCat(
        kind, " '", spec.name, "': config data_type ",
        inference::DataType_Name(tensor->data_type()), " but the model has ",
        inference::DataType_Name(model_type)));
  }
  if (tensor->is_shape_tensor()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kind, " '", spec.name, "': shape tensors are not supported"));
  }
  if (tensor->has_reshape()) {
    // The model sees `reshape`, clients `dims` (reshape_instance.h).
    if (tensor->dims_size() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          kind, " '", spec.name, "': a reshape needs the dims clients use"));
    }
    const Shape reshape(tensor->reshape().shape().begin(),
                        tensor->reshape().shape().end());
    if (absl::Status s = CheckDims(spec.name, kind, *model_dims, reshape);
        !s.ok()) {
      return s;
    }
    return ReshapeCompatible(
        kind, spec.name, Shape(tensor->dims().begin(), tensor->dims().end()),
        reshape);
  }
  if (tensor->dims_size() == 0 && !model_dims->empty()) {
    for (int64_t d : *model_dims) tensor->add_dims(d);
  }
  return CheckDims(spec.name, kind, *model_dims,
                   Shape(tensor->dims().begin(), tensor->dims().end()));
}

template <typename TensorConfig, typename AddFn>
absl::Status CompleteTensors(
    const std::vector<TensorSpec>& specs, bool batching, const char* kind,
    google::protobuf::RepeatedPtrField<TensorConfig>* tensors, AddFn add) {
  for (const TensorConfig& tensor : *tensors) {
    if (FindTensorSpec(specs, tensor.name()) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config ", kind, " '", tensor.name(), "' is not an ", kind,
          " of the model (model ", kind, "s: ", Names(specs), ")"));
    }
  }
  for (const TensorSpec& spec : specs) {
    TensorConfig* tensor = nullptr;
    for (TensorConfig& t : *tensors) {
      if (t.name() == spec.name) tensor = &t;
    }
    if (tensor == nullptr) {
      tensor = add();
      tensor->set_name(spec.name);
    }
    if (absl::Status s = CompleteTensor(spec, batching, kind, tensor);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status CheckInputFlags(const ModelConfig& config) {
  for (const auto& input : config.input()) {
    if (input.allow_ragged_batch() || input.optional()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", input.name(),
          "': ragged batching and optional inputs are not supported"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckScheduling(const ModelConfig& config) {
  if (config.has_ensemble_scheduling()) {
    return absl::InvalidArgumentError("ensemble scheduling is not supported");
  }
  if (config.has_sequence_batching()) {
    if (absl::Status s = CheckSequenceBatching(config); !s.ok()) return s;
  }
  if (config.batch_input_size() > 0 || config.batch_output_size() > 0) {
    return absl::InvalidArgumentError(
        "batch_input / batch_output (ragged batching) are not supported");
  }
  if (config.model_transaction_policy().decoupled()) {
    return absl::InvalidArgumentError("decoupled models are not supported");
  }
  if (config.max_batch_size() < 0) {
    return absl::InvalidArgumentError("max_batch_size must not be negative");
  }
  if (!config.has_dynamic_batching()) return absl::OkStatus();
  const auto& db = config.dynamic_batching();
  if (config.max_batch_size() == 0) {
    return absl::InvalidArgumentError(
        "dynamic_batching needs max_batch_size > 0");
  }
  for (int size : db.preferred_batch_size()) {
    if (size < 1 || size > config.max_batch_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "preferred_batch_size ", size, " is outside [1, max_batch_size ",
          config.max_batch_size(), "]"));
    }
  }
  const uint64_t levels = db.priority_levels();
  if (levels > 0 && (db.default_priority_level() < 1 ||
                     db.default_priority_level() > levels)) {
    return absl::InvalidArgumentError(
        absl::StrCat("default_priority_level ", db.default_priority_level(),
                     " is outside [1, priority_levels ", levels, "]"));
  }
  for (const auto& [level, policy] : db.priority_queue_policy()) {
    if (level < 1 || level > levels) {
      return absl::InvalidArgumentError(
          absl::StrCat("priority_queue_policy for level ", level,
                       " is outside [1, priority_levels ", levels, "]"));
    }
  }
  return absl::OkStatus();
}

absl::Status CompleteInstanceGroups(ModelConfig* config) {
  if (config->instance_group_size() == 0) {
    auto* group = config->add_instance_group();
    group->set_count(1);
    group->set_kind(inference::ModelInstanceGroup::KIND_CPU);
  }
  for (int i = 0; i < config->instance_group_size(); ++i) {
    auto* group = config->mutable_instance_group(i);
    if (group->name().empty()) {
      group->set_name(absl::StrCat(config->name(), "_", i));
    }
    if (group->kind() == inference::ModelInstanceGroup::KIND_MODEL) {
      return absl::InvalidArgumentError(absl::StrCat(
          "instance_group '", group->name(), "': KIND_MODEL is not supported"));
    }
    // KIND_GPU and KIND_AUTO are resolved when the instances are created
    // (server/executor_factory.h).
    if (group->count() < 1) group->set_count(1);
  }
  return absl::OkStatus();
}

// The tensors clients send and receive: all but sequence batching's.
ModelSignature ClientSignature(const ModelSignature& signature,
                               const ModelConfig& config) {
  const std::set<std::string> hidden = SequenceTensorNames(config);
  ModelSignature client;
  for (const TensorSpec& spec : signature.inputs) {
    if (!hidden.contains(spec.name)) client.inputs.push_back(spec);
  }
  for (const TensorSpec& spec : signature.outputs) {
    if (!hidden.contains(spec.name)) client.outputs.push_back(spec);
  }
  return client;
}

template <typename Tensors>
absl::Status CheckItemSizes(const Tensors& tensors, const char* kind,
                            int64_t memory_limit) {
  for (const auto& t : tensors) {
    const auto dtype = static_cast<DataType>(t.data_type());
    const int64_t element =
        dtype == DataType::kBytes ? 4 : int64_t(ElementByteSize(dtype));
    int64_t bytes = element;
    for (int64_t d : t.dims()) {
      if (d > 0 && bytes > memory_limit / d) {
        return absl::InvalidArgumentError(absl::StrCat(
            kind, " '", t.name(), "': dims [", absl::StrJoin(t.dims(), ","),
            "] need more than ", memory_limit,
            " bytes per batch item, the memory this server has"));
      }
      if (d > 0) bytes *= d;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckBackendSupported(const ModelConfig& config) {
  constexpr char kWhat[] =
      " is not supported by this server: Coalesce serves ONNX models (backend "
      "'onnxruntime', platform 'onnxruntime_onnx')";
  if (!config.backend().empty() && config.backend() != "onnxruntime") {
    return absl::InvalidArgumentError(
        absl::StrCat("backend '", config.backend(), "'", kWhat));
  }
  if (!config.platform().empty() && config.platform() != "onnxruntime_onnx") {
    return absl::InvalidArgumentError(
        absl::StrCat("platform '", config.platform(), "'", kWhat));
  }
  return absl::OkStatus();
}

absl::Status CheckTensorSizes(const ModelConfig& config, int64_t memory_limit) {
  if (absl::Status s = CheckItemSizes(config.input(), "input", memory_limit);
      !s.ok()) {
    return s;
  }
  return CheckItemSizes(config.output(), "output", memory_limit);
}

absl::Status CompleteModelConfig(const ModelSignature& signature,
                                 ModelConfig* config) {
  if (absl::Status s = CheckBackendSupported(*config); !s.ok()) return s;
  config->set_platform("onnxruntime_onnx");
  AutoCompleteBatching(signature, config);
  if (absl::Status s = CheckScheduling(*config); !s.ok()) return s;
  const bool batching = config->max_batch_size() > 0;
  const ModelSignature client = ClientSignature(signature, *config);
  absl::Status s =
      CompleteTensors(client.inputs, batching, "input", config->mutable_input(),
                      [config] { return config->add_input(); });
  if (!s.ok()) return s;
  s = CompleteTensors(client.outputs, batching, "output",
                      config->mutable_output(),
                      [config] { return config->add_output(); });
  if (!s.ok()) return s;
  if (s = CheckInputFlags(*config); !s.ok()) return s;
  return CompleteInstanceGroups(config);
}

}  // namespace coalesce
