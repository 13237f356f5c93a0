#include "batching/request_validator.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/serialized_bytes.h"

namespace coalesce {
namespace {

absl::Status InputError(const std::string& name, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("input '", name, "': ", what));
}

// The config dims with the batch dim (-1) put back when the model batches.
Shape FullDims(const TensorSpec& spec, bool batched) {
  Shape dims = spec.dims;
  if (batched) dims.insert(dims.begin(), -1);
  return dims;
}

// InvalidArgument unless serialized BYTES `input.data` holds exactly `count`
// elements.
absl::Status CheckSerialized(const TensorSpec& spec, const RequestInput& input,
                             int64_t count) {
  const std::optional<size_t> used = SerializedPrefixSize(input.data, count);
  if (!used.has_value()) {
    return InputError(
        spec.name, absl::StrCat("BYTES data ends before its ", count,
                                " elements (shape ", ShapeToString(input.shape),
                                "; each element is a 4-byte length and its "
                                "bytes)"));
  }
  if (*used != input.data.size()) {
    return InputError(spec.name,
                      absl::StrCat("BYTES data has ", input.data.size() - *used,
                                   " bytes after its ", count, " elements"));
  }
  return absl::OkStatus();
}

// InvalidArgument unless `input.data` holds exactly its shape's bytes.
absl::Status CheckByteSize(const TensorSpec& spec, const RequestInput& input) {
  const std::optional<int64_t> count = ElementCount(input.shape);
  if (count.has_value() && spec.dtype == DataType::kBytes) {
    if (input.device) {
      return InputError(spec.name, "BYTES data must be in host memory");
    }
    return CheckSerialized(spec, input, *count);
  }
  const size_t element_size = ElementByteSize(spec.dtype);
  if (!count.has_value() ||
      static_cast<uint64_t>(*count) >
          std::numeric_limits<size_t>::max() / element_size) {
    return InputError(spec.name, "shape is too large");
  }
  const size_t expected = static_cast<size_t>(*count) * element_size;
  if (input.byte_size() != expected) {
    return InputError(
        spec.name,
        absl::StrCat("got ", input.byte_size(), " bytes of data, shape ",
                     ShapeToString(input.shape), " needs ", expected));
  }
  return absl::OkStatus();
}

}  // namespace

RequestValidator::RequestValidator(int max_batch_size,
                                   std::vector<TensorSpec> inputs,
                                   std::vector<TensorSpec> outputs)
    : max_batch_size_(max_batch_size),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)) {
  for (int i = 0; i < static_cast<int>(inputs_.size()); ++i) {
    input_index_[inputs_[i].name] = i;
  }
  for (int i = 0; i < static_cast<int>(outputs_.size()); ++i) {
    output_index_[outputs_[i].name] = i;
  }
}

absl::StatusOr<RequestLayout> RequestValidator::Validate(
    const InferenceRequest& request) const {
  RequestLayout layout;
  layout.batch_size = -1;  // Unknown until the first input is checked.
  if (absl::Status s = MapInputs(request, &layout); !s.ok()) return s;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const RequestInput& input = request.inputs[layout.input_order[i]];
    if (absl::Status s = CheckInput(inputs_[i], input, &layout); !s.ok()) {
      return s;
    }
  }
  if (max_batch_size_ == 0) layout.batch_size = 1;
  if (absl::Status s = MapOutputs(request, &layout); !s.ok()) return s;
  return layout;
}

absl::Status RequestValidator::MapInputs(const InferenceRequest& request,
                                         RequestLayout* layout) const {
  layout->input_order.assign(inputs_.size(), -1);
  for (int r = 0; r < static_cast<int>(request.inputs.size()); ++r) {
    const std::string& name = request.inputs[r].name;
    auto it = input_index_.find(name);
    if (it == input_index_.end()) {
      return InputError(name, "unexpected input, the model has no such input");
    }
    if (layout->input_order[it->second] != -1) {
      return InputError(name, "duplicate input");
    }
    layout->input_order[it->second] = r;
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (layout->input_order[i] == -1) {
      return InputError(inputs_[i].name, "missing input");
    }
  }
  return absl::OkStatus();
}

absl::Status RequestValidator::CheckInput(const TensorSpec& spec,
                                          const RequestInput& input,
                                          RequestLayout* layout) const {
  if (input.dtype != spec.dtype) {
    return InputError(
        spec.name,
        absl::StrCat("datatype ", std::string(DataTypeName(input.dtype)),
                     " does not match the model's ",
                     std::string(DataTypeName(spec.dtype))));
  }
  const bool batched = max_batch_size_ > 0;
  Shape item = input.shape;
  if (batched) {
    if (item.empty()) {
      return InputError(spec.name, "shape [] has no batch dimension");
    }
    if (absl::Status s = CheckBatchSize(spec, item[0], layout); !s.ok()) {
      return s;
    }
    item.erase(item.begin());
  }
  if (!ShapeMatches(spec.dims, item)) {
    return InputError(spec.name,
                      absl::StrCat("shape ", ShapeToString(input.shape),
                                   " does not match the model dims ",
                                   ShapeToString(FullDims(spec, batched))));
  }
  if (absl::Status s = CheckByteSize(spec, input); !s.ok()) return s;
  layout->item_shapes.push_back(std::move(item));
  return absl::OkStatus();
}

absl::Status RequestValidator::CheckBatchSize(const TensorSpec& spec,
                                              int64_t batch_size,
                                              RequestLayout* layout) const {
  if (batch_size < 1 || batch_size > max_batch_size_) {
    return InputError(
        spec.name, absl::StrCat("batch size ", batch_size, " is outside [1, ",
                                max_batch_size_, "]"));
  }
  if (layout->batch_size >= 0 && batch_size != layout->batch_size) {
    return InputError(
        spec.name,
        absl::StrCat("batch size ", batch_size,
                     " differs from the other inputs' ", layout->batch_size));
  }
  layout->batch_size = batch_size;
  return absl::OkStatus();
}

absl::Status RequestValidator::MapOutputs(const InferenceRequest& request,
                                          RequestLayout* layout) const {
  if (request.requested_outputs.empty()) {
    for (int i = 0; i < static_cast<int>(outputs_.size()); ++i) {
      layout->output_order.push_back(i);
    }
    return absl::OkStatus();
  }
  std::vector<bool> seen(outputs_.size(), false);
  for (const std::string& name : request.requested_outputs) {
    auto it = output_index_.find(name);
    if (it == output_index_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "requested output '", name, "': the model has no such output"));
    }
    if (seen[it->second]) {
      return absl::InvalidArgumentError(
          absl::StrCat("requested output '", name, "': requested twice"));
    }
    seen[it->second] = true;
    layout->output_order.push_back(it->second);
  }
  return absl::OkStatus();
}

}  // namespace coalesce
