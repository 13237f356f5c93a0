#include "engine/device/simulated_kernels.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/device/kernel_args.h"
#include "engine/device/kernel_checks.h"
#include "engine/device/simulated_attention.h"
#include "engine/device/simulated_cnn.h"
#include "engine/device/simulated_floats.h"
#include "kernels/cuda/elementwise_math.h"
#include "kernels/cuda/gather_math.h"
#include "kernels/cuda/half_math.h"
#include "kernels/cuda/indexing_math.h"
#include "kernels/cuda/layer_norm_math.h"
#include "kernels/cuda/pad_math.h"
#include "kernels/cuda/pool_math.h"
#include "kernels/cuda/quantize_math.h"
#include "kernels/cuda/resize_math.h"
#include "kernels/cuda/softmax_math.h"
#include "kernels/cuda/transpose_math.h"
#include "kernels/cuda/typed_math.h"

namespace coalesce {
namespace {

namespace kc = kernels::cuda;
using Region = SimulatedDevice::MemoryRegion;

Region Floats(const float* p, int64_t count) {
  return {p, static_cast<size_t>(count) * sizeof(float)};
}

Region Halves(const Half* p, int64_t count) {
  return {p, static_cast<size_t>(count) * sizeof(Half)};
}

// `count` 16-bit values of `type` as floats (exact).
std::vector<float> Widen(const Half* x, int64_t count, DeviceFloat type) {
  std::vector<float> y(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) y[i] = WidenBits(x[i], type);
  return y;
}

// A float tensor of `count` elements as stored (float32 or 16 bits).
Region Elements(FloatIn x, int64_t count) {
  return {x.data, static_cast<size_t>(count) * DeviceFloatBytes(x.type)};
}
Region Elements(FloatOut y, int64_t count) {
  return Elements(FloatIn(y.data, y.type), count);
}

int64_t Count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Region Bytes(const void* p, const Shape& shape, size_t element_bytes) {
  return {p, static_cast<size_t>(Count(shape)) * element_bytes};
}

// Copies element `src` of data into element `i` of y, or zeros it when src
// is -1 (an index out of range).
void CopyElement(const void* data, int64_t src, size_t element_bytes, void* y,
                 int64_t i) {
  char* out = static_cast<char*>(y) + i * element_bytes;
  if (src < 0) {
    std::memset(out, 0, element_bytes);
  } else {
    std::memcpy(out, static_cast<const char*>(data) + src * element_bytes,
                element_bytes);
  }
}

// y[i] = element offset + TransposeSourceOffset(ix, i) of x, for i < n:
// Transpose, Broadcast and StridedCopy (every index they read is in x).
void CopyIndexed(const kc::TransposeIndexer& ix, const void* x, int64_t offset,
                 size_t element_bytes, void* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    CopyElement(x, offset + kc::TransposeSourceOffset(ix, i), element_bytes, y,
                i);
  }
}

// Index `pos` of int64 or int32 indices.
int64_t IndexAt(const void* indices, bool int64, int64_t pos) {
  return int64 ? static_cast<const int64_t*>(indices)[pos]
               : static_cast<const int32_t*>(indices)[pos];
}

// fn(T{}) for the arithmetic type of `type` (float32, int64, int32).
template <typename Fn>
absl::Status ForArithmetic(DataType type, Fn fn) {
  switch (type) {
    case DataType::kFp32:
      return fn(float{});
    case DataType::kInt64:
      return fn(int64_t{});
    case DataType::kInt32:
      return fn(int32_t{});
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("expected float32, int64 or int32, not ",
                       std::string(DataTypeName(type))));
  }
}

template <typename Q>
void QuantizeAs(const QuantizeArgs& a, int64_t i) {
  kc::QuantizeElement<Q>(a.quantize, a.x, a.scale,
                         static_cast<const Q*>(a.zero_point), a.y, a.channels,
                         a.inner, i);
}

// Element i of the quantize kernel for the quantized type `type`.
void QuantizeAt(kc::QuantType type, const QuantizeArgs& a, int64_t i) {
  switch (type) {
    case kc::QuantType::kInt8:
      return QuantizeAs<int8_t>(a, i);
    case kc::QuantType::kUint8:
      return QuantizeAs<uint8_t>(a, i);
    case kc::QuantType::kInt16:
      return QuantizeAs<int16_t>(a, i);
    case kc::QuantType::kUint16:
      return QuantizeAs<uint16_t>(a, i);
    case kc::QuantType::kInt32:
      return QuantizeAs<int32_t>(a, i);
  }
}

template <typename T>
void WhereAs(const kc::TypedIndexer& ix, const uint8_t* cond, const void* x,
             const void* z, void* y, int64_t i) {
  kc::WhereElement(ix, cond, static_cast<const T*>(x), static_cast<const T*>(z),
                   static_cast<T*>(y), i);
}

// Element i of Where for elements of `element_bytes` (1, 2, 4 or 8).
void WhereAt(size_t element_bytes, const kc::TypedIndexer& ix,
             const uint8_t* cond, const void* x, const void* z, void* y,
             int64_t i) {
  switch (element_bytes) {
    case 1:
      return WhereAs<uint8_t>(ix, cond, x, z, y, i);
    case 2:
      return WhereAs<uint16_t>(ix, cond, x, z, y, i);
    case 4:
      return WhereAs<uint32_t>(ix, cond, x, z, y, i);
    default:
      return WhereAs<uint64_t>(ix, cond, x, z, y, i);
  }
}

class SimulatedKernels : public DeviceKernels {
 public:
  SimulatedKernels(SimulatedDevice* device, std::chrono::microseconds duration)
      : device_(device), duration_(duration) {}

  std::string description() const override {
    return "simulated kernels (host math)";
  }

  absl::Status Gemm(DeviceStream& stream, const GemmArgs& g) override {
    const int64_t a_count = (g.batch - 1) * g.stride_a + g.m * g.k;
    const int64_t b_count = (g.batch - 1) * g.stride_b + g.k * g.n;
    const bool half = g.a_half != nullptr;
    if (!half && (g.c.is_16bit() || g.bias.is_16bit())) {
      return absl::InvalidArgumentError(
          "Gemm: a 16-bit c or bias needs 16-bit operands");
    }
    if (half && (g.half_type == DeviceFloat::kFloat ||
                 (g.c.is_16bit() && g.c.type != g.half_type))) {
      return absl::InvalidArgumentError(
          "Gemm: a 16-bit c must have the operands' 16-bit type");
    }
    if (g.bias.data != nullptr && g.bias.type != g.c.type) {
      return absl::InvalidArgumentError("Gemm: bias must have c's type");
    }
    if (g.z.data != nullptr && g.z.type != g.c.type) {
      return absl::InvalidArgumentError(
          "Gemm: the residual z must have c's type");
    }
    std::vector<Region> reads = {
        half ? Halves(g.a_half, a_count) : Floats(g.a, a_count),
        half ? Halves(g.b_half, b_count) : Floats(g.b, b_count)};
    if (g.bias.data != nullptr) reads.push_back(Elements(g.bias, g.n));
    const int64_t c_count = (g.batch - 1) * g.stride_c + g.m * g.n;
    if (g.z.data != nullptr) reads.push_back(Elements(g.z, c_count));
    return Launch(
        stream, "gemm", std::move(reads), {Elements(g.c, c_count)}, [=] {
          if (!half) return RunGemm(g);
          // 16-bit products are exact in float32: widen and run.
          const std::vector<float> a = Widen(g.a_half, a_count, g.half_type);
          const std::vector<float> b = Widen(g.b_half, b_count, g.half_type);
          GemmArgs wide = g;
          wide.a = a.data();
          wide.b = b.data();
          RunGemm(wide);
        });
  }

  absl::Status ToHalf(DeviceStream& stream, const float* x, Half* y,
                      int64_t count, DeviceFloat type) override {
    if (type == DeviceFloat::kFloat)
      return absl::InvalidArgumentError("ToHalf: not a 16-bit type");
    return Launch(stream, "to_half", {Floats(x, count)}, {Halves(y, count)},
                  [=] {
                    for (int64_t i = 0; i < count; ++i)
                      y[i] = NarrowBits(x[i], type);
                  });
  }

  absl::Status FromHalf(DeviceStream& stream, const Half* x, float* y,
                        int64_t count, DeviceFloat type) override {
    if (type == DeviceFloat::kFloat)
      return absl::InvalidArgumentError("FromHalf: not a 16-bit type");
    return Launch(stream, "from_half", {Halves(x, count)}, {Floats(y, count)},
                  [=] {
                    for (int64_t i = 0; i < count; ++i)
                      y[i] = WidenBits(x[i], type);
                  });
  }

  absl::Status Activation(DeviceStream& stream, ActivationSpec f, FloatIn x,
                          FloatOut y, int64_t count) override {
    return Launch(
        stream, "activation", {Elements(x, count)}, {Elements(y, count)}, [=] {
          const kc::Activation act = ToKernel(f.kind);
          for (int64_t i = 0; i < count; ++i)
            Store(y, i, kc::ApplyActivation(act, Load(x, i), f.alpha, f.beta));
        });
  }

  absl::Status Binary(DeviceStream& stream, const BinaryArgs& a) override {
    kc::BroadcastIndexer ix;
    absl::StatusOr<int64_t> n = CheckBinary(a, &ix);
    if (!n.ok()) return n.status();
    return Launch(
        stream, "binary",
        {Elements(a.a, Count(a.a_shape)), Elements(a.b, Count(a.b_shape))},
        {Elements(a.y, *n)},
        [=, op = ToKernel(a.op), x = a.a, z = a.b, y = a.y, n = *n] {
          for (int64_t i = 0; i < n; ++i) {
            int64_t xi = 0, zi = 0;
            kc::BroadcastOffsets(ix, i, &xi, &zi);
            Store(y, i, kc::ApplyBinary(op, Load(x, xi), Load(z, zi)));
          }
        });
  }

  absl::Status Softmax(DeviceStream& stream, FloatIn x, FloatOut y,
                       int64_t rows, int64_t cols) override {
    return Launch(stream, "softmax", {Elements(x, rows * cols)},
                  {Elements(y, rows * cols)}, [=] {
                    for (int64_t r = 0; r < rows; ++r) {
                      kc::MaxSum row = kc::EmptyMaxSum();
                      for (int64_t c = 0; c < cols; ++c)
                        row = kc::AddElement(row, Load(x, r * cols + c));
                      for (int64_t c = 0; c < cols; ++c)
                        Store(y, r * cols + c,
                              kc::SoftmaxValue(Load(x, r * cols + c), row));
                    }
                  });
  }

  absl::Status Transpose(DeviceStream& stream,
                         const TransposeArgs& a) override {
    kc::TransposeIndexer ix;
    absl::StatusOr<int64_t> n = CheckTranspose(a, &ix);
    if (!n.ok()) return n.status();
    const size_t bytes = static_cast<size_t>(*n) * a.element_bytes;
    return Launch(stream, "transpose", {{a.x, bytes}}, {{a.y, bytes}},
                  [=, n = *n, elem = a.element_bytes, x = a.x, y = a.y] {
                    CopyIndexed(ix, x, /*offset=*/0, elem, y, n);
                  });
  }

  absl::Status Broadcast(DeviceStream& stream,
                         const BroadcastArgs& a) override {
    kc::TransposeIndexer ix;
    absl::StatusOr<int64_t> n = CheckBroadcast(a, &ix);
    if (!n.ok()) return n.status();
    const size_t out_bytes = static_cast<size_t>(*n) * a.element_bytes;
    return Launch(stream, "broadcast", {Bytes(a.x, a.x_shape, a.element_bytes)},
                  {{a.y, out_bytes}},
                  [=, n = *n, elem = a.element_bytes, x = a.x, y = a.y] {
                    CopyIndexed(ix, x, /*offset=*/0, elem, y, n);
                  });
  }

  absl::Status LayerNorm(DeviceStream& stream,
                         const LayerNormArgs& a) override {
    if (absl::Status s = CheckLayerNorm(a); !s.ok()) return s;
    std::vector<Region> reads = {Elements(a.x, a.rows * a.cols),
                                 Floats(a.scale, a.cols)};
    if (a.bias != nullptr) reads.push_back(Floats(a.bias, a.cols));
    std::vector<Region> writes = {Elements(a.y, a.rows * a.cols)};
    if (a.residual.data != nullptr)
      reads.push_back(Elements(a.residual, a.residual_rows * a.cols));
    if (a.sum.data != nullptr)
      writes.push_back(Elements(a.sum, a.rows * a.cols));
    return Launch(stream, "layer_norm", std::move(reads), std::move(writes),
                  [a] { RunLayerNorm(a); });
  }

  absl::Status Gather(DeviceStream& stream, const GatherArgs& a) override {
    const int64_t n = a.outer * a.num_indices * a.inner;
    const size_t data_bytes =
        static_cast<size_t>(a.outer * a.axis_dim * a.inner) * a.element_bytes;
    const size_t index_bytes =
        static_cast<size_t>(a.num_indices) * (a.indices_int64 ? 8 : 4);
    return Launch(
        stream, "gather", {{a.data, data_bytes}, {a.indices, index_bytes}},
        {{a.y, static_cast<size_t>(n) * a.element_bytes}}, [=] {
          for (int64_t i = 0; i < n; ++i) {
            const int64_t pos =
                kc::GatherIndexPosition(i, a.num_indices, a.inner);
            const int64_t index = IndexAt(a.indices, a.indices_int64, pos);
            CopyElement(a.data,
                        kc::GatherSourceOffset(i, index, a.axis_dim,
                                               a.num_indices, a.inner),
                        a.element_bytes, a.y, i);
          }
        });
  }

  absl::Status Typed(DeviceStream& stream, const TypedArgs& a) override {
    kc::ElementType element;
    kc::TypedIndexer ix;
    absl::StatusOr<int64_t> n = CheckTyped(a, &element, &ix);
    if (!n.ok()) return n.status();
    const kc::TypedOp op = ToKernel(a.op);
    const size_t elem = ElementByteSize(a.type);
    const size_t y_elem = kc::IsPredicate(op) ? 1 : elem;
    std::vector<Region> reads = {Bytes(a.a, a.a_shape, elem)};
    if (!kc::IsUnaryTyped(op)) reads.push_back(Bytes(a.b, a.b_shape, elem));
    return Launch(stream, "typed", std::move(reads),
                  {{a.y, static_cast<size_t>(*n) * y_elem}},
                  [=, n = *n, x = a.a, z = a.b, y = a.y] {
                    for (int64_t i = 0; i < n; ++i)
                      kc::TypedElement(op, element, ix, x, z, y, i);
                  });
  }

  absl::Status Where(DeviceStream& stream, const WhereArgs& a) override {
    kc::TypedIndexer ix;
    absl::StatusOr<int64_t> n = CheckWhere(a, &ix);
    if (!n.ok()) return n.status();
    std::vector<Region> reads = {Bytes(a.cond, a.cond_shape, 1),
                                 Bytes(a.x, a.x_shape, a.element_bytes),
                                 Bytes(a.z, a.z_shape, a.element_bytes)};
    return Launch(stream, "where", std::move(reads),
                  {{a.y, static_cast<size_t>(*n) * a.element_bytes}},
                  [=, n = *n, c = static_cast<const uint8_t*>(a.cond)] {
                    for (int64_t i = 0; i < n; ++i)
                      WhereAt(a.element_bytes, ix, c, a.x, a.z, a.y, i);
                  });
  }

  absl::Status Cast(DeviceStream& stream, const CastArgs& a) override {
    kc::ElementType source, target;
    if (absl::Status s = CheckCast(a, &source, &target); !s.ok()) return s;
    const size_t n = static_cast<size_t>(a.count);
    return Launch(stream, "cast", {{a.x, n * ElementByteSize(a.from)}},
                  {{a.y, n * ElementByteSize(a.to)}}, [=] {
                    for (int64_t i = 0; i < a.count; ++i)
                      kc::CastElement(source, a.x, target, a.y, i);
                  });
  }

  absl::Status StridedCopy(DeviceStream& stream,
                           const StridedCopyArgs& a) override {
    kc::TransposeIndexer ix;
    absl::StatusOr<int64_t> n = CheckStridedCopy(a, &ix);
    if (!n.ok()) return n.status();
    const size_t elem = a.element_bytes;
    return Launch(stream, "strided_copy",
                  {{a.x, static_cast<size_t>(a.x_count) * elem}},
                  {{a.y, static_cast<size_t>(*n) * elem}},
                  [=, n = *n, x = a.x, offset = a.offset, y = a.y] {
                    CopyIndexed(ix, x, offset, elem, y, n);
                  });
  }

  absl::Status Pad(DeviceStream& stream, const PadArgs& a) override {
    kc::PadIndexer ix;
    absl::StatusOr<int64_t> n = CheckPad(a, &ix);
    if (!n.ok()) return n.status();
    return Launch(stream, "pad", {Bytes(a.x, a.x_shape, a.element_bytes)},
                  {Bytes(a.y, a.y_shape, a.element_bytes)}, [=, n = *n] {
                    for (int64_t i = 0; i < n; ++i) {
                      const int64_t src = kc::PadSource(ix, i);
                      if (src < 0) {  // the fill's low bytes (little-endian)
                        std::memcpy(
                            static_cast<char*>(a.y) + i * a.element_bytes,
                            &a.fill, a.element_bytes);
                      } else {
                        CopyElement(a.x, src, a.element_bytes, a.y, i);
                      }
                    }
                  });
  }

  absl::Status Quantize(DeviceStream& stream, const QuantizeArgs& a) override {
    kc::QuantType type;
    if (absl::Status s = CheckQuantize(a, &type); !s.ok()) return s;
    const int64_t n = a.outer * a.channels * a.inner;
    const size_t q = ElementByteSize(a.quantized);
    const size_t x_bytes = n * (a.quantize ? sizeof(float) : q);
    const size_t y_bytes = n * (a.quantize ? q : sizeof(float));
    std::vector<Region> reads = {{a.x, x_bytes}, Floats(a.scale, a.channels)};
    if (a.zero_point != nullptr)
      reads.push_back({a.zero_point, a.channels * q});
    return Launch(stream, "quantize", std::move(reads), {{a.y, y_bytes}}, [=] {
      for (int64_t i = 0; i < n; ++i) QuantizeAt(type, a, i);
    });
  }

  absl::Status Resize(DeviceStream& stream, const ResizeArgs& a) override {
    kc::ResizeIndexer ix;
    absl::StatusOr<int64_t> n = CheckResize(a, &ix);
    if (!n.ok()) return n.status();
    int64_t in = 1;
    for (const ResizeAxisSpec& axis : a.axes) in *= axis.in;
    return Launch(stream, "resize", {Floats(a.x, in)}, {Floats(a.y, *n)},
                  [=, n = *n] {
                    for (int64_t i = 0; i < n; ++i)
                      a.y[i] = kc::ResizeElement(ix, a.x, i);
                  });
  }

  absl::Status GatherNd(DeviceStream& stream, const GatherNdArgs& a) override {
    kc::GatherNdIndexer ix;
    if (absl::Status s = CheckGatherNd(a, &ix); !s.ok()) return s;
    const int64_t rows = a.batches * a.rows_per_batch;
    const int64_t n = rows * a.slice;
    const size_t data_bytes =
        static_cast<size_t>(a.batches * ix.batch_stride) * a.element_bytes;
    const size_t index_bytes = static_cast<size_t>(rows * ix.k) * 8;
    return Launch(stream, "gather_nd",
                  {{a.data, data_bytes}, {a.indices, index_bytes}},
                  {{a.y, static_cast<size_t>(n) * a.element_bytes}}, [=] {
                    for (int64_t i = 0; i < n; ++i) {
                      CopyElement(a.data, kc::GatherNdSource(ix, a.indices, i),
                                  a.element_bytes, a.y, i);
                    }
                  });
  }

  absl::Status GatherElements(DeviceStream& stream,
                              const GatherElementsArgs& a) override {
    kc::GatherElementsIndexer ix;
    if (absl::Status s = CheckGatherElements(a, &ix); !s.ok()) return s;
    const int64_t n = Count(a.indices_shape);
    const size_t index_bytes = a.indices_int64 ? 8 : 4;
    return Launch(
        stream, "gather_elements",
        {Bytes(a.data, a.data_shape, a.element_bytes),
         Bytes(a.indices, a.indices_shape, index_bytes)},
        {Bytes(a.y, a.indices_shape, a.element_bytes)}, [=] {
          for (int64_t i = 0; i < n; ++i) {
            const int64_t index = IndexAt(a.indices, a.indices_int64, i);
            CopyElement(a.data, kc::GatherElementsSource(ix, index, i),
                        a.element_bytes, a.y, i);
          }
        });
  }

  absl::Status CumSum(DeviceStream& stream, const CumSumArgs& a) override {
    if (absl::Status s = CheckArithmetic(a.type, "CumSum"); !s.ok()) return s;
    const size_t bytes =
        static_cast<size_t>(a.outer * a.n * a.inner) * ElementByteSize(a.type);
    return ForArithmetic(a.type, [&](auto tag) {
      using T = decltype(tag);
      return Launch(stream, "cumsum", {{a.x, bytes}}, {{a.y, bytes}}, [=] {
        for (int64_t line = 0; line < a.outer * a.inner; ++line) {
          kc::CumSumLine(static_cast<const T*>(a.x), static_cast<T*>(a.y), line,
                         a.n, a.inner, a.exclusive, a.reverse);
        }
      });
    });
  }

  absl::Status ArgMax(DeviceStream& stream, const ArgMaxArgs& a) override {
    if (absl::Status s = CheckArithmetic(a.type, "ArgMax"); !s.ok()) return s;
    const size_t bytes =
        static_cast<size_t>(a.outer * a.n * a.inner) * ElementByteSize(a.type);
    const int64_t lines = a.n == 0 ? 0 : a.outer * a.inner;
    return ForArithmetic(a.type, [&](auto tag) {
      using T = decltype(tag);
      return Launch(stream, "argmax", {{a.x, bytes}},
                    {{a.y, static_cast<size_t>(lines) * sizeof(int64_t)}}, [=] {
                      for (int64_t line = 0; line < lines; ++line) {
                        a.y[line] =
                            kc::ArgMaxLine(static_cast<const T*>(a.x), line,
                                           a.n, a.inner, a.select_last);
                      }
                    });
    });
  }

  absl::Status Conv2D(DeviceStream& stream, const ConvArgs& a) override {
    const int64_t x_count = a.n * a.c * a.in_h * a.in_w;
    const int64_t w_count = a.m * (a.c / a.groups) * a.kernel_h * a.kernel_w;
    const int64_t y_count = a.n * a.m * a.out_h * a.out_w;
    const bool half = a.x.is_16bit();
    if (a.w.type != a.x.type) {
      return absl::InvalidArgumentError(
          "Conv2D: x and w must both be float32 or of one 16-bit type");
    }
    if (half && !a.y.is_16bit() && a.y_scratch == nullptr) {
      return absl::InvalidArgumentError(
          "Conv2D: a 16-bit convolution into float32 y needs y_scratch");
    }
    if (absl::Status s =
            CheckOne16BitType({a.x.type, a.y.type, a.z.type}, "Conv2D");
        !s.ok()) {
      return s;
    }
    std::vector<Region> reads = {Elements(a.x, x_count),
                                 Elements(a.w, w_count)};
    if (a.bias != nullptr) reads.push_back(Floats(a.bias, a.m));
    if (a.z.data != nullptr) reads.push_back(Elements(a.z, y_count));
    std::vector<Region> writes = {Elements(a.y, y_count)};
    if (half && !a.y.is_16bit()) writes.push_back(Halves(a.y_scratch, y_count));
    return Launch(stream, half ? "conv2d_half" : "conv2d", std::move(reads),
                  std::move(writes), [=] { RunSimulatedConv2D(a); });
  }

  absl::Status Pool2D(DeviceStream& stream, const Pool2DArgs& args, FloatIn x,
                      FloatOut y) override {
    const kc::Pool2DGeometry g = ToGeometry(args);
    const int64_t planes = args.planes;
    if (args.channels_last &&
        (args.channels <= 0 || planes % args.channels != 0)) {
      return absl::InvalidArgumentError("Pool2D: channels must divide planes");
    }
    return Launch(stream, "pool2d", {Elements(x, planes * g.in_h * g.in_w)},
                  {Elements(y, planes * g.out_h * g.out_w)},
                  [=] { RunSimulatedPool2D(args, x, y); });
  }

  absl::Status Lrn(DeviceStream& stream, const LrnArgs& a) override {
    const int64_t n = a.batch * a.channels * a.spatial;
    return Launch(stream, "lrn", {Floats(a.x, n)}, {Floats(a.y, n)}, [=] {
      const int64_t image = a.channels * a.spatial;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t b = i / image, r = i % image;
        a.y[i] =
            kc::LrnValue(a.x + b * image, a.channels, a.spatial, r / a.spatial,
                         r % a.spatial, a.size, a.alpha, a.beta, a.bias);
      }
    });
  }

  absl::Status ChannelAffine(DeviceStream& stream,
                             const ChannelAffineArgs& a) override {
    const int64_t n = a.batch * a.channels * a.spatial;
    std::vector<Region> reads = {Elements(a.x, n)};
    if (a.scale != nullptr) reads.push_back(Floats(a.scale, a.channels));
    if (a.shift != nullptr) reads.push_back(Floats(a.shift, a.channels));
    return Launch(stream, "channel_affine", std::move(reads),
                  {Elements(a.y, n)}, [=] { RunSimulatedChannelAffine(a); });
  }

  absl::Status Copy2D(DeviceStream& stream, const Copy2DArgs& a) override {
    if (a.rows == 0) return absl::OkStatus();
    const Region read = {a.src, (a.rows - 1) * a.src_pitch + a.row_bytes};
    const Region write = {a.dst, (a.rows - 1) * a.dst_pitch + a.row_bytes};
    return Launch(stream, "copy2d", {read}, {write}, [=] {
      for (size_t r = 0; r < a.rows; ++r) {
        std::memcpy(static_cast<char*>(a.dst) + r * a.dst_pitch,
                    static_cast<const char*>(a.src) + r * a.src_pitch,
                    a.row_bytes);
      }
    });
  }

  absl::Status Attention(DeviceStream& stream,
                         const AttentionArgs& a) override {
    if (absl::Status s = CheckAttention(a); !s.ok()) return s;
    // Packed rows: q, k, v and out span packed_rows rows, batch stride
    // unused.
    const bool packed = a.pack != nullptr;
    auto region = [&](FloatIn x, std::array<int64_t, 4> strides, int64_t rows,
                      int64_t cols) {
      if (packed) strides[0] = 0;
      return Elements(
          x, AttentionSpan(strides, {packed ? 1 : a.batch, a.heads,
                                     packed ? a.packed_rows : rows, cols}));
    };
    std::vector<Region> reads = {
        region(a.q, a.q_strides, a.q_len, a.head_dim),
        region(a.k, a.k_strides, a.kv_len, a.head_dim),
        region(a.v, a.v_strides, a.kv_len, a.head_dim)};
    if (a.mask.data != nullptr) {
      reads.push_back(Elements(
          a.mask, AttentionSpan(a.mask_strides,
                                {a.batch, a.heads, a.q_len, a.kv_len})));
    }
    if (packed)
      reads.push_back(
          {a.pack, static_cast<size_t>(a.packed_rows) * sizeof(int64_t)});
    return Launch(stream, "attention", std::move(reads),
                  {region(FloatIn(a.out.data, a.out.type), a.out_strides,
                          a.q_len, a.head_dim)},
                  [a] { RunSimulatedAttention(a); });
  }

 private:
  // The product accumulated in double, then alpha, bias and the
  // activation in float32, stored (rounded once) in c's type.
  static void RunGemm(const GemmArgs& g) {
    const kc::Activation act = ToKernel(g.activation.kind);
    for (int64_t b = 0; b < g.batch; ++b) {
      const float* a = g.a + b * g.stride_a;
      const float* w = g.b + b * g.stride_b;
      const int64_t c = b * g.stride_c;
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < g.k; ++p) {
            const float av = g.trans_a ? a[p * g.m + i] : a[i * g.k + p];
            const float bv = g.trans_b ? w[j * g.k + p] : w[p * g.n + j];
            sum += double{av} * bv;
          }
          float v = static_cast<float>(g.alpha * sum);
          if (g.bias.data != nullptr) v += Load(g.bias, j);
          if (g.z.data != nullptr) v += Load(g.z, c + i * g.n + j);
          Store(g.c, c + i * g.n + j,
                kc::ApplyActivation(act, v, g.activation.alpha,
                                    g.activation.beta));
        }
      }
    }
  }

  static void RunLayerNorm(const LayerNormArgs& a) {
    std::vector<float> in(static_cast<size_t>(a.cols));
    for (int64_t r = 0; r < a.rows; ++r) {
      for (int64_t c = 0; c < a.cols; ++c) in[c] = Load(a.x, r * a.cols + c);
      if (a.residual.data != nullptr) {
        const int64_t from = (r % a.residual_rows) * a.cols;
        for (int64_t c = 0; c < a.cols; ++c) {
          in[c] = kc::RoundSum(in[c] + Load(a.residual, from + c),
                               ToKernel(a.sum.type));
          if (a.sum.data != nullptr) Store(a.sum, r * a.cols + c, in[c]);
        }
      }
      kc::MeanM2 row = kc::EmptyMeanM2();
      for (int64_t c = 0; c < a.cols; ++c) row = kc::AddValue(row, in[c]);
      const float inv = kc::InvStdDev(row, a.epsilon);
      for (int64_t c = 0; c < a.cols; ++c) {
        Store(a.y, r * a.cols + c,
              kc::LayerNormValue(in[c], row.mean, inv, a.scale[c],
                                 a.bias != nullptr ? a.bias[c] : 0.0f));
      }
    }
  }

  template <typename Body>
  absl::Status Launch(DeviceStream& stream, const char* name,
                      std::vector<Region> reads, std::vector<Region> writes,
                      Body body) {
    SimulatedDevice::Kernel kernel;
    kernel.name = name;
    kernel.reads = std::move(reads);
    kernel.writes = std::move(writes);
    kernel.duration = duration_;
    kernel.body = [body]() {
      body();
      return absl::OkStatus();
    };
    return device_->Launch(stream, std::move(kernel));
  }

  SimulatedDevice* const device_;
  const std::chrono::microseconds duration_;
};

}  // namespace

std::unique_ptr<DeviceKernels> CreateSimulatedKernels(
    SimulatedDevice* device, std::chrono::microseconds launch_duration) {
  return std::make_unique<SimulatedKernels>(device, launch_duration);
}

}  // namespace coalesce
