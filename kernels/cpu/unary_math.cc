#include "kernels/cpu/unary_math.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/fast_math.h"

namespace coalesce::kernels {
namespace {

constexpr int64_t kParallelElements = 1 << 15;

// Applies fn to every element, in parallel for large arrays; functions made
// of plain arithmetic are vectorized too.
template <typename Fn>
void Map(const float* in, int64_t n, float* out, Fn fn) {
#pragma omp parallel for simd if (n >= kParallelElements)
  for (int64_t i = 0; i < n; ++i) out[i] = fn(in[i]);
}

// log(1 + exp(x)) without overflow for large x.
float Softplus(float x) {
  return x > 0.0f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

float GeluTanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const float inner = kSqrt2OverPi * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + std::tanh(inner));
}

}  // namespace

void Unary(UnaryOp op, const UnaryParams& p, const float* in, int64_t n,
           float* out) {
  switch (op) {
    case UnaryOp::kSqrt:
      return Map(in, n, out, [](float x) { return std::sqrt(x); });
    case UnaryOp::kExp:
      return Map(in, n, out, [](float x) { return std::exp(x); });
    case UnaryOp::kLog:
      return Map(in, n, out, [](float x) { return std::log(x); });
    case UnaryOp::kNeg:
      return Map(in, n, out, [](float x) { return -x; });
    case UnaryOp::kAbs:
      return Map(in, n, out, [](float x) { return std::fabs(x); });
    case UnaryOp::kReciprocal:
      return Map(in, n, out, [](float x) { return 1.0f / x; });
    case UnaryOp::kErf:
      return Map(in, n, out, FastErf);
    case UnaryOp::kSoftplus:
      return Map(in, n, out, Softplus);
    case UnaryOp::kSoftsign:
      return Map(in, n, out, [](float x) { return x / (1.0f + std::fabs(x)); });
    case UnaryOp::kLeakyRelu:
      return Map(in, n, out,
                 [a = p.alpha](float x) { return x >= 0.0f ? x : a * x; });
    case UnaryOp::kElu:
      return Map(in, n, out, [a = p.alpha](float x) {
        return x >= 0.0f ? x : a * std::expm1(x);
      });
    case UnaryOp::kSelu:
      return Map(in, n, out, [a = p.alpha, g = p.gamma](float x) {
        return g * (x > 0.0f ? x : a * std::expm1(x));
      });
    case UnaryOp::kHardSigmoid:
      return Map(in, n, out, [a = p.alpha, b = p.beta](float x) {
        return std::max(0.0f, std::min(1.0f, a * x + b));
      });
    case UnaryOp::kGelu:
      return Map(in, n, out, [](float x) {
        constexpr float kInvSqrt2 = 0.7071067811865476f;
        return 0.5f * x * (1.0f + FastErf(x * kInvSqrt2));
      });
    case UnaryOp::kGeluTanh:
      return Map(in, n, out, GeluTanh);
    case UnaryOp::kFloor:
      return Map(in, n, out, [](float x) { return std::floor(x); });
    case UnaryOp::kCeil:
      return Map(in, n, out, [](float x) { return std::ceil(x); });
    case UnaryOp::kRound:  // the default rounding mode: ties to even
      return Map(in, n, out, [](float x) { return std::nearbyint(x); });
    case UnaryOp::kSin:
      return Map(in, n, out, [](float x) { return std::sin(x); });
    case UnaryOp::kCos:
      return Map(in, n, out, [](float x) { return std::cos(x); });
    case UnaryOp::kHardSwish:
      return Map(in, n, out, [](float x) {
        return x * std::max(0.0f, std::min(1.0f, x / 6.0f + 0.5f));
      });
    case UnaryOp::kMish:
      return Map(in, n, out,
                 [](float x) { return x * std::tanh(Softplus(x)); });
    case UnaryOp::kCelu:
      return Map(in, n, out, [a = p.alpha](float x) {
        return std::max(0.0f, x) + std::min(0.0f, a * std::expm1(x / a));
      });
    case UnaryOp::kThresholdedRelu:
      return Map(in, n, out,
                 [a = p.alpha](float x) { return x > a ? x : 0.0f; });
  }
}

void Clip(const float* in, int64_t n, float lo, float hi, float* out) {
  Map(in, n, out, [lo, hi](float x) {
    if (std::isnan(x)) return x;
    const float y = x < lo ? lo : x;  // as min(max(x, lo), hi)
    return y > hi ? hi : y;
  });
}

}  // namespace coalesce::kernels
