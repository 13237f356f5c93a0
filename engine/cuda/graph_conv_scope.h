// GraphConvScope: which 16-bit convolutions (ConvArgs,
// engine/device/device_kernels.h) the cuDNN graph path (cudnn_graph_conv.h)
// is allowed to take by their layout, before it builds anything. Host code
// only, no CUDA: tested without a GPU (graph_conv_scope_test.cc).
//
// The rule: a channels_last (NHWC) convolution, with or without an
// epilogue, and a bare NCHW one (no bias, no residual z, identity
// activation) go to the graph; an NCHW convolution with an epilogue does
// not, unless `nchw_epilogues` asks for it. Why: the FP16 NCHW
// `mbconv_se` device case (EfficientNet's block: depthwise + bias + SiLU,
// 1x1 + bias + SiLU, 1x1 + bias + Sigmoid, 1x1 + float32 residual) gave
// wrong values on an H100 and an H200 through the graph path, while the
// same block passes in NHWC FP16 (graphs) and in FP32 (cuDNN's legacy
// calls); every convolution it has that no passing case has is an NCHW
// graph with an epilogue. cuDNN documents its runtime-fusion engines for
// NHWC; NCHW is not the layout the server picks for 16-bit models
// (gpu_layout's default is "nhwc" there). docs/device-pipeline.md, "Fused
// convolutions".
#ifndef COALESCE_ENGINE_CUDA_GRAPH_CONV_SCOPE_H_
#define COALESCE_ENGINE_CUDA_GRAPH_CONV_SCOPE_H_

#include "absl/status/status.h"
#include "engine/device/device_kernels.h"

namespace coalesce {

// OK when the graph path may take `a` by its layout; Unimplemented saying
// why when the legacy path must run it.
absl::Status GraphConvLayoutAllows(const ConvArgs& a, bool nchw_epilogues);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_CUDA_GRAPH_CONV_SCOPE_H_
