// IdentityProgram: a DeviceProgram whose output i is a device-to-device copy
// of input i. It runs no operator, so it exercises a Device and the pipelined
// executor alone: on the simulated device in tests, on a real GPU in
// coalesce-device-check before any GPU operator exists.
#ifndef COALESCE_ENGINE_DEVICE_IDENTITY_PROGRAM_H_
#define COALESCE_ENGINE_DEVICE_IDENTITY_PROGRAM_H_

#include <vector>

#include "engine/device/device_program.h"

namespace coalesce {

class IdentityProgram : public DeviceProgram {
 public:
  // REQUIRES: `device` outlives the program; signature.outputs[i] has the
  // dtype and dims of signature.inputs[i] for every i.
  IdentityProgram(Device* device, ModelSignature signature)
      : device_(device), signature_(std::move(signature)) {}

  const ModelSignature& signature() const override { return signature_; }
  absl::StatusOr<std::vector<Shape>> OutputShapes(
      const std::vector<Shape>& input_shapes) const override;
  absl::Status Enqueue(DeviceStream& stream,
                       const std::vector<Shape>& input_shapes,
                       const std::vector<const void*>& inputs,
                       const std::vector<void*>& outputs) override;

 private:
  Device* const device_;
  const ModelSignature signature_;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_IDENTITY_PROGRAM_H_
