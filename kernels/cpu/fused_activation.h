// FusedActivation: an activation applied to a kernel's result before it is
// stored (Conv + Relu, Gemm + bias + Sigmoid, ...), so the tensor is written
// once. The graph optimizer fuses these; the kernels apply them through
// oneDNN post-ops or ApplyFusedActivation. Plain value type.
#ifndef COALESCE_KERNELS_CPU_FUSED_ACTIVATION_H_
#define COALESCE_KERNELS_CPU_FUSED_ACTIVATION_H_

#include <cstdint>

namespace coalesce::kernels {

struct FusedActivation {
  enum class Kind {
    kNone,
    kRelu,
    kLeakyRelu,  // alpha: the slope below zero
    kClip,       // alpha: min, beta: max
    kSigmoid,
    kTanh,
    kSilu,         // x * sigmoid(x) (EfficientNet's SiLU/Swish)
    kHardSwish,    // x * max(0, min(1, x / 6 + 1/2)) (MobileNetV3)
    kHardSigmoid,  // max(0, min(1, alpha x + beta))
    kGeluErf,      // 0.5 x (1 + erf(x / sqrt 2)) (BERT's GELU)
    kGeluTanh,     // GELU's tanh approximation
  };
  Kind kind = Kind::kNone;
  float alpha = 0.0f;
  float beta = 0.0f;
};

// Applies `act` in place to data[0, n). Threaded per kernels/cpu/threading.h.
void ApplyFusedActivation(const FusedActivation& act, float* data, int64_t n);

}  // namespace coalesce::kernels

#endif  // COALESCE_KERNELS_CPU_FUSED_ACTIVATION_H_
