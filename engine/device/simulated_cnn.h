// The host math of the simulated device's CNN primitives
// (simulated_kernels.h): what Conv2D, Pool2D and ChannelAffine compute, as
// DeviceKernels specifies it (engine/device/device_kernels.h), in either
// layout and storage. The launches around them (regions, the race check)
// stay in simulated_kernels.cc. Internal to engine/device/.
#ifndef COALESCE_ENGINE_DEVICE_SIMULATED_CNN_H_
#define COALESCE_ENGINE_DEVICE_SIMULATED_CNN_H_

#include "engine/device/device_kernels.h"

namespace coalesce {

// ConvArgs' contract: operands widened to float32 (float16 products are
// exact there) and put in NCHW / OIHW order, a direct convolution
// accumulating in double, the result rounded to float16 in FP16 (also into
// y_scratch, as the CUDA path stores it), then bias, z and the activation
// in float32, stored in y's type and layout. REQUIRES: the operands as
// CheckConvOperands accepts them.
void RunSimulatedConv2D(const ConvArgs& a);

// Each plane gathered into NCHW order, pooled with the CUDA kernel's
// PoolValue, stored in y's layout and type.
void RunSimulatedPool2D(const Pool2DArgs& args, FloatIn x, FloatOut y);

void RunSimulatedChannelAffine(const ChannelAffineArgs& a);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_SIMULATED_CNN_H_
