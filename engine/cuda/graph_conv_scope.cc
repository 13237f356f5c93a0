#include "engine/cuda/graph_conv_scope.h"

namespace coalesce {

absl::Status GraphConvLayoutAllows(const ConvArgs& a, bool nchw_epilogues) {
  const bool epilogue = a.bias != nullptr || a.z.data != nullptr ||
                        a.activation.kind != DeviceActivation::kIdentity;
  if (a.channels_last || !epilogue || nchw_epilogues) return absl::OkStatus();
  return absl::UnimplementedError(
      "cuDNN graph convolution: NCHW with an epilogue (legacy path; "
      "COALESCE_CUDNN_GRAPH_CONV=nchw takes the graph)");
}

}  // namespace coalesce
