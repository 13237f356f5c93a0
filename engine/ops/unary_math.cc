// Float elementwise math (engine/schema/unary_schema.h) on the CPU: Relu,
// Sigmoid and Tanh through kernels/cpu/activation.h, Clip through
// kernels::Clip, the rest through kernels::Unary.
#include "kernels/cpu/unary_math.h"

#include <memory>

#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/schema/unary_schema.h"
#include "kernels/cpu/activation.h"

namespace coalesce {
namespace {

// The kernels' operator of `kind` (kRelu, kSigmoid, kTanh and kClip have
// kernels of their own).
kernels::UnaryOp KernelOp(UnaryKind kind) {
  using K = UnaryKind;
  using U = kernels::UnaryOp;
  switch (kind) {
    case K::kSqrt:
      return U::kSqrt;
    case K::kExp:
      return U::kExp;
    case K::kLog:
      return U::kLog;
    case K::kReciprocal:
      return U::kReciprocal;
    case K::kErf:
      return U::kErf;
    case K::kSoftplus:
      return U::kSoftplus;
    case K::kSoftsign:
      return U::kSoftsign;
    case K::kLeakyRelu:
      return U::kLeakyRelu;
    case K::kElu:
      return U::kElu;
    case K::kSelu:
      return U::kSelu;
    case K::kHardSigmoid:
      return U::kHardSigmoid;
    case K::kGeluErf:
      return U::kGelu;
    case K::kGeluTanh:
      return U::kGeluTanh;
    case K::kFloor:
      return U::kFloor;
    case K::kCeil:
      return U::kCeil;
    case K::kRound:
      return U::kRound;
    case K::kSin:
      return U::kSin;
    case K::kCos:
      return U::kCos;
    case K::kHardSwish:
      return U::kHardSwish;
    case K::kMish:
      return U::kMish;
    case K::kCelu:
      return U::kCelu;
    case K::kThresholdedRelu:
      return U::kThresholdedRelu;
    case K::kRelu:
    case K::kSigmoid:
    case K::kTanh:
    case K::kClip:
      break;
  }
  return U::kSqrt;  // not reached: Run handles those kinds itself
}

class UnaryMathOp : public SchemaKernel {
 public:
  UnaryMathOp(const OpNode& node, const UnaryAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs) {}

  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    const int64_t n = DimProduct(*in[0].shape, 0, in[0].shape->size());
    switch (attrs_.kind) {
      case UnaryKind::kRelu:
        kernels::Relu(x, n, y);
        break;
      case UnaryKind::kSigmoid:
        kernels::Sigmoid(x, n, y);
        break;
      case UnaryKind::kTanh:
        kernels::Tanh(x, n, y);
        break;
      case UnaryKind::kClip: {
        float lo = attrs_.alpha, hi = attrs_.beta;
        if (attrs_.bounds_from_inputs) {
          if (in.size() > 1 && in[1].present()) lo = in[1].as<float>()[0];
          if (in.size() > 2 && in[2].present()) hi = in[2].as<float>()[0];
        }
        kernels::Clip(x, n, lo, hi, y);
        break;
      }
      default:
        kernels::Unary(KernelOp(attrs_.kind),
                       {attrs_.alpha, attrs_.beta, attrs_.gamma}, x, n, y);
    }
    return absl::OkStatus();
  }

 private:
  const UnaryAttrs attrs_;
};

}  // namespace

void RegisterUnaryMathOps(OpRegistry& registry) {
  for (const char* op : {"Relu",
                         "Sigmoid",
                         "Tanh",
                         "Sqrt",
                         "Exp",
                         "Log",
                         "Reciprocal",
                         "Erf",
                         "Softplus",
                         "Softsign",
                         "LeakyRelu",
                         "Elu",
                         "Selu",
                         "HardSigmoid",
                         "Floor",
                         "Ceil",
                         "Round",
                         "Sin",
                         "Cos",
                         "HardSwish",
                         "Mish",
                         "Celu",
                         "ThresholdedRelu",
                         "Gelu",
                         "Clip"}) {
    registry.Register(op, SchemaFactoryOf<UnaryMathOp, UnaryAttrs>());
  }
  registry.RegisterInternal("Gelu", SchemaFactoryOf<UnaryMathOp, UnaryAttrs>());
}

}  // namespace coalesce
