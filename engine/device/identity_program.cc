#include "engine/device/identity_program.h"

#include "absl/strings/str_cat.h"

namespace coalesce {

absl::StatusOr<std::vector<Shape>> IdentityProgram::OutputShapes(
    const std::vector<Shape>& input_shapes) const {
  if (input_shapes.size() != signature_.inputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", signature_.inputs.size(), " inputs, got ",
                     input_shapes.size()));
  }
  for (size_t i = 0; i < input_shapes.size(); ++i) {
    const TensorSpec& spec = signature_.inputs[i];
    if (!ShapeMatches(spec.dims, input_shapes[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", spec.name, "' has shape ", ShapeToString(input_shapes[i]),
          ", expected ", ShapeToString(spec.dims)));
    }
  }
  return input_shapes;
}

absl::Status IdentityProgram::Enqueue(DeviceStream& stream,
                                      const std::vector<Shape>& input_shapes,
                                      const std::vector<const void*>& inputs,
                                      const std::vector<void*>& outputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t bytes = static_cast<size_t>(*ElementCount(input_shapes[i])) *
                         ElementByteSize(signature_.inputs[i].dtype);
    absl::Status s =
        device_->CopyOnDevice(stream, outputs[i], inputs[i], bytes);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace coalesce
