#include "engine/device/simulated_kernels.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/device/kernel_args.h"
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

// The extent of `batch` matrices of `size` elements, `stride` apart.
template <typename T>
Region Matrices(const T* p, int64_t batch, int64_t stride, int64_t size) {
  return {p, static_cast<size_t>((batch - 1) * stride + size) * sizeof(T)};
}

// `count` float16 values as floats (exact).
std::vector<float> Widen(const Half* x, int64_t count) {
  std::vector<float> y(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) y[i] = kc::HalfBitsToFloat(x[i]);
  return y;
}

int64_t Count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Region Bytes(const void* p, const Shape& shape, size_t element_bytes) {
  return {p, static_cast<size_t>(Count(shape)) * element_bytes};
}

absl::Status NoBroadcast(const std::vector<const Shape*>& inputs,
                         const Shape& y) {
  std::string shapes;
  for (const Shape* s : inputs)
    absl::StrAppend(&shapes, ShapeToString(*s), " ");
  return absl::InvalidArgumentError(absl::StrCat(
      "shapes ", shapes, "do not broadcast to ", ShapeToString(y)));
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
    std::vector<Region> reads = {
        half ? Halves(g.a_half, a_count) : Floats(g.a, a_count),
        half ? Halves(g.b_half, b_count) : Floats(g.b, b_count)};
    if (g.bias != nullptr) reads.push_back(Floats(g.bias, g.n));
    return Launch(stream, "gemm", std::move(reads),
                  {Matrices(g.c, g.batch, g.stride_c, g.m * g.n)}, [=] {
                    if (!half) return RunGemm(g);
                    // float16 products are exact in float32: widen and run.
                    const std::vector<float> a = Widen(g.a_half, a_count);
                    const std::vector<float> b = Widen(g.b_half, b_count);
                    GemmArgs wide = g;
                    wide.a = a.data();
                    wide.b = b.data();
                    RunGemm(wide);
                  });
  }

  absl::Status ToHalf(DeviceStream& stream, const float* x, Half* y,
                      int64_t count) override {
    return Launch(stream, "to_half", {Floats(x, count)}, {Halves(y, count)},
                  [=] {
                    for (int64_t i = 0; i < count; ++i)
                      y[i] = kc::FloatToHalfBits(x[i]);
                  });
  }

  absl::Status FromHalf(DeviceStream& stream, const Half* x, float* y,
                        int64_t count) override {
    return Launch(stream, "from_half", {Halves(x, count)}, {Floats(y, count)},
                  [=] {
                    for (int64_t i = 0; i < count; ++i)
                      y[i] = kc::HalfBitsToFloat(x[i]);
                  });
  }

  absl::Status Activation(DeviceStream& stream, ActivationSpec f,
                          const float* x, float* y, int64_t count) override {
    return Launch(stream, "activation", {Floats(x, count)}, {Floats(y, count)},
                  [=] {
                    const kc::Activation act = ToKernel(f.kind);
                    for (int64_t i = 0; i < count; ++i)
                      y[i] = kc::ApplyActivation(act, x[i], f.alpha, f.beta);
                  });
  }

  absl::Status Binary(DeviceStream& stream, DeviceBinaryOp op, const float* a,
                      const Shape& a_shape, const float* b,
                      const Shape& b_shape, float* y) override {
    kc::BroadcastIndexer ix;
    const int64_t n = BroadcastIndexerFor(a_shape, b_shape, &ix);
    if (n < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes ", ShapeToString(a_shape), " and ",
                       ShapeToString(b_shape), " do not broadcast"));
    }
    return Launch(stream, "binary",
                  {Floats(a, Count(a_shape)), Floats(b, Count(b_shape))},
                  {Floats(y, n)}, [=] {
                    const kc::BinaryOp kop = ToKernel(op);
                    for (int64_t i = 0; i < n; ++i) {
                      int64_t ai = 0, bi = 0;
                      kc::BroadcastOffsets(ix, i, &ai, &bi);
                      y[i] = kc::ApplyBinary(kop, a[ai], b[bi]);
                    }
                  });
  }

  absl::Status Softmax(DeviceStream& stream, const float* x, float* y,
                       int64_t rows, int64_t cols) override {
    return Launch(stream, "softmax", {Floats(x, rows * cols)},
                  {Floats(y, rows * cols)}, [=] {
                    for (int64_t r = 0; r < rows; ++r) {
                      kc::MaxSum row = kc::EmptyMaxSum();
                      for (int64_t c = 0; c < cols; ++c)
                        row = kc::AddElement(row, x[r * cols + c]);
                      for (int64_t c = 0; c < cols; ++c)
                        y[r * cols + c] =
                            kc::SoftmaxValue(x[r * cols + c], row);
                    }
                  });
  }

  absl::Status Transpose(DeviceStream& stream, const void* x,
                         const Shape& x_shape, const std::vector<int64_t>& perm,
                         size_t element_bytes, void* y) override {
    kc::TransposeIndexer ix;
    const int64_t n = TransposeIndexerFor(x_shape, perm, &ix);
    if (n < 0) return absl::InvalidArgumentError("bad transpose permutation");
    const size_t bytes = static_cast<size_t>(n) * element_bytes;
    return Launch(stream, "transpose", {{x, bytes}}, {{y, bytes}}, [=] {
      const char* in = static_cast<const char*>(x);
      char* out = static_cast<char*>(y);
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(out + i * element_bytes,
                    in + kc::TransposeSourceOffset(ix, i) * element_bytes,
                    element_bytes);
      }
    });
  }

  absl::Status Broadcast(DeviceStream& stream, const void* x,
                         const Shape& x_shape, const Shape& y_shape,
                         size_t element_bytes, void* y) override {
    kc::TransposeIndexer ix;
    const int64_t n = ExpandIndexerFor(x_shape, y_shape, &ix);
    if (n < 0) return absl::InvalidArgumentError("shapes do not broadcast");
    const size_t in_bytes = static_cast<size_t>(Count(x_shape)) * element_bytes;
    const size_t out_bytes = static_cast<size_t>(n) * element_bytes;
    return Launch(stream, "broadcast", {{x, in_bytes}}, {{y, out_bytes}}, [=] {
      const char* in = static_cast<const char*>(x);
      char* out = static_cast<char*>(y);
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(out + i * element_bytes,
                    in + kc::TransposeSourceOffset(ix, i) * element_bytes,
                    element_bytes);
      }
    });
  }

  absl::Status LayerNorm(DeviceStream& stream, const float* x,
                         const float* scale, const float* bias, float* y,
                         int64_t rows, int64_t cols, float epsilon) override {
    std::vector<Region> reads = {Floats(x, rows * cols), Floats(scale, cols)};
    if (bias != nullptr) reads.push_back(Floats(bias, cols));
    return Launch(
        stream, "layer_norm", std::move(reads), {Floats(y, rows * cols)}, [=] {
          for (int64_t r = 0; r < rows; ++r) {
            const float* in = x + r * cols;
            kc::MeanM2 row = kc::EmptyMeanM2();
            for (int64_t c = 0; c < cols; ++c) row = kc::AddValue(row, in[c]);
            const float inv = kc::InvStdDev(row, epsilon);
            for (int64_t c = 0; c < cols; ++c) {
              y[r * cols + c] =
                  kc::LayerNormValue(in[c], row.mean, inv, scale[c],
                                     bias != nullptr ? bias[c] : 0.0f);
            }
          }
        });
  }

  absl::Status Gather(DeviceStream& stream, const void* data,
                      size_t element_bytes, int64_t outer, int64_t axis_dim,
                      int64_t inner, const void* indices, bool indices_int64,
                      int64_t num_indices, void* y) override {
    const int64_t n = outer * num_indices * inner;
    const size_t index_bytes = indices_int64 ? 8 : 4;
    return Launch(
        stream, "gather",
        {{data, static_cast<size_t>(outer * axis_dim * inner) * element_bytes},
         {indices, static_cast<size_t>(num_indices) * index_bytes}},
        {{y, static_cast<size_t>(n) * element_bytes}}, [=] {
          for (int64_t i = 0; i < n; ++i) {
            const int64_t pos = kc::GatherIndexPosition(i, num_indices, inner);
            const int64_t index =
                indices_int64 ? static_cast<const int64_t*>(indices)[pos]
                              : static_cast<const int32_t*>(indices)[pos];
            CopyElement(
                data,
                kc::GatherSourceOffset(i, index, axis_dim, num_indices, inner),
                element_bytes, y, i);
          }
        });
  }

  absl::Status Typed(DeviceStream& stream, DeviceTypedOp op, DataType type,
                     const void* a, const Shape& a_shape, const void* b,
                     const Shape& b_shape, void* y,
                     const Shape& y_shape) override {
    kc::ElementType element;
    if (!ElementTypeOf(type, &element)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "typed kernels do not take ", std::string(DataTypeName(type))));
    }
    const kc::TypedOp kop = ToKernel(op);
    const bool unary = kc::IsUnaryTyped(kop);
    kc::TypedIndexer ix;
    const int64_t n = unary
                          ? TypedIndexerFor({&a_shape}, y_shape, &ix)
                          : TypedIndexerFor({&a_shape, &b_shape}, y_shape, &ix);
    if (n < 0) return NoBroadcast({&a_shape, &b_shape}, y_shape);
    const size_t elem = ElementByteSize(type);
    const size_t y_elem = kc::IsPredicate(kop) ? 1 : elem;
    std::vector<Region> reads = {Bytes(a, a_shape, elem)};
    if (!unary) reads.push_back(Bytes(b, b_shape, elem));
    return Launch(stream, "typed", std::move(reads),
                  {{y, static_cast<size_t>(n) * y_elem}}, [=] {
                    for (int64_t i = 0; i < n; ++i)
                      kc::TypedElement(kop, element, ix, a, b, y, i);
                  });
  }

  absl::Status Where(DeviceStream& stream, const void* cond,
                     const Shape& cond_shape, const void* x,
                     const Shape& x_shape, const void* z, const Shape& z_shape,
                     size_t element_bytes, void* y,
                     const Shape& y_shape) override {
    kc::TypedIndexer ix;
    const int64_t n =
        TypedIndexerFor({&cond_shape, &x_shape, &z_shape}, y_shape, &ix);
    if (n < 0) return NoBroadcast({&cond_shape, &x_shape, &z_shape}, y_shape);
    if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4 &&
        element_bytes != 8) {
      return absl::InvalidArgumentError("Where of elements of this size");
    }
    std::vector<Region> reads = {Bytes(cond, cond_shape, 1),
                                 Bytes(x, x_shape, element_bytes),
                                 Bytes(z, z_shape, element_bytes)};
    const auto* c = static_cast<const uint8_t*>(cond);
    return Launch(stream, "where", std::move(reads),
                  {{y, static_cast<size_t>(n) * element_bytes}}, [=] {
                    for (int64_t i = 0; i < n; ++i) {
                      switch (element_bytes) {
                        case 1:
                          WhereAs<uint8_t>(ix, c, x, z, y, i);
                          break;
                        case 2:
                          WhereAs<uint16_t>(ix, c, x, z, y, i);
                          break;
                        case 4:
                          WhereAs<uint32_t>(ix, c, x, z, y, i);
                          break;
                        default:
                          WhereAs<uint64_t>(ix, c, x, z, y, i);
                      }
                    }
                  });
  }

  absl::Status Cast(DeviceStream& stream, DataType from, const void* x,
                    DataType to, void* y, int64_t count) override {
    kc::ElementType source, target;
    if (!ElementTypeOf(from, &source) || !ElementTypeOf(to, &target)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cast kernel does not take ", std::string(DataTypeName(from)), " to ",
          std::string(DataTypeName(to))));
    }
    const size_t n = static_cast<size_t>(count);
    return Launch(stream, "cast", {{x, n * ElementByteSize(from)}},
                  {{y, n * ElementByteSize(to)}}, [=] {
                    for (int64_t i = 0; i < count; ++i)
                      kc::CastElement(source, x, target, y, i);
                  });
  }

  absl::Status StridedCopy(DeviceStream& stream, const void* x, int64_t x_count,
                           int64_t offset, const std::vector<int64_t>& strides,
                           const Shape& y_shape, size_t element_bytes,
                           void* y) override {
    kc::TransposeIndexer ix;
    const int64_t n = StridedIndexerFor(strides, y_shape, &ix);
    if (n < 0) return absl::InvalidArgumentError("strided copy above rank 8");
    if (!StridedViewInBounds(x_count, offset, strides, y_shape)) {
      return absl::InvalidArgumentError(
          "strided copy reads outside its source");
    }
    return Launch(stream, "strided_copy",
                  {{x, static_cast<size_t>(x_count) * element_bytes}},
                  {{y, static_cast<size_t>(n) * element_bytes}}, [=] {
                    for (int64_t i = 0; i < n; ++i) {
                      CopyElement(x, offset + kc::TransposeSourceOffset(ix, i),
                                  element_bytes, y, i);
                    }
                  });
  }

  absl::Status Pad(DeviceStream& stream, const PadArgs& a) override {
    kc::PadIndexer ix;
    const int64_t n = PadIndexerFor(a, &ix);
    if (n < 0) return absl::InvalidArgumentError("Pad shapes");
    return Launch(stream, "pad", {Bytes(a.x, a.x_shape, a.element_bytes)},
                  {Bytes(a.y, a.y_shape, a.element_bytes)}, [=] {
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
    if (!QuantTypeOf(a.quantized, &type) ||
        (a.quantize && a.quantized == DataType::kInt32)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "quantized type ", std::string(DataTypeName(a.quantized))));
    }
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
    const int64_t n = ResizeIndexerFor(a, &ix);
    if (n < 0) return absl::InvalidArgumentError("a Resize the kernel lacks");
    int64_t in = 1;
    for (const ResizeAxisSpec& axis : a.axes) in *= axis.in;
    return Launch(stream, "resize", {Floats(a.x, in)}, {Floats(a.y, n)}, [=] {
      for (int64_t i = 0; i < n; ++i) a.y[i] = kc::ResizeElement(ix, a.x, i);
    });
  }

  absl::Status GatherNd(DeviceStream& stream, const GatherNdArgs& a) override {
    kc::GatherNdIndexer ix;
    if (!GatherNdIndexerFor(a, &ix)) {
      return absl::InvalidArgumentError("GatherND index tuples above 8");
    }
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
    if (!GatherElementsIndexerFor(a, &ix)) {
      return absl::InvalidArgumentError("GatherElements shapes or axis");
    }
    const int64_t n = Count(a.indices_shape);
    const size_t index_bytes = a.indices_int64 ? 8 : 4;
    return Launch(
        stream, "gather_elements",
        {Bytes(a.data, a.data_shape, a.element_bytes),
         Bytes(a.indices, a.indices_shape, index_bytes)},
        {Bytes(a.y, a.indices_shape, a.element_bytes)}, [=] {
          for (int64_t i = 0; i < n; ++i) {
            const int64_t index =
                a.indices_int64 ? static_cast<const int64_t*>(a.indices)[i]
                                : static_cast<const int32_t*>(a.indices)[i];
            CopyElement(a.data, kc::GatherElementsSource(ix, index, i),
                        a.element_bytes, a.y, i);
          }
        });
  }

  absl::Status CumSum(DeviceStream& stream, DataType type, const void* x,
                      void* y, int64_t outer, int64_t n, int64_t inner,
                      bool exclusive, bool reverse) override {
    const size_t bytes =
        static_cast<size_t>(outer * n * inner) * ElementByteSize(type);
    return ForArithmetic(type, [&](auto tag) {
      using T = decltype(tag);
      return Launch(stream, "cumsum", {{x, bytes}}, {{y, bytes}}, [=] {
        for (int64_t line = 0; line < outer * inner; ++line) {
          kc::CumSumLine(static_cast<const T*>(x), static_cast<T*>(y), line, n,
                         inner, exclusive, reverse);
        }
      });
    });
  }

  absl::Status ArgMax(DeviceStream& stream, DataType type, const void* x,
                      int64_t* y, int64_t outer, int64_t n, int64_t inner,
                      bool select_last) override {
    const size_t bytes =
        static_cast<size_t>(outer * n * inner) * ElementByteSize(type);
    const int64_t lines = n == 0 ? 0 : outer * inner;
    return ForArithmetic(type, [&](auto tag) {
      using T = decltype(tag);
      return Launch(stream, "argmax", {{x, bytes}},
                    {{y, static_cast<size_t>(lines) * sizeof(int64_t)}}, [=] {
                      for (int64_t line = 0; line < lines; ++line) {
                        y[line] = kc::ArgMaxLine(static_cast<const T*>(x), line,
                                                 n, inner, select_last);
                      }
                    });
    });
  }

  absl::Status Conv2D(DeviceStream& stream, const ConvArgs& a) override {
    const int64_t x_count = a.n * a.c * a.in_h * a.in_w;
    const int64_t w_count = a.m * (a.c / a.groups) * a.kernel_h * a.kernel_w;
    const int64_t y_count = a.n * a.m * a.out_h * a.out_w;
    if (a.x_half != nullptr) return HalfConv2D(stream, a, x_count, w_count);
    std::vector<Region> reads = {Floats(a.x, x_count), Floats(a.w, w_count)};
    if (a.bias != nullptr) reads.push_back(Floats(a.bias, a.m));
    if (a.z != nullptr) reads.push_back(Floats(a.z, y_count));
    return Launch(stream, "conv2d", std::move(reads), {Floats(a.y, y_count)},
                  [a] { RunConv(a); });
  }

  // As the CUDA kernels do: the float16 convolution (accumulating in
  // float32 or better) rounds its result to y_half, then bias and
  // activation on the widened result.
  absl::Status HalfConv2D(DeviceStream& stream, const ConvArgs& a,
                          int64_t x_count, int64_t w_count) {
    const int64_t y_count = a.n * a.m * a.out_h * a.out_w;
    std::vector<Region> reads = {Halves(a.x_half, x_count),
                                 Halves(a.w_half, w_count)};
    if (a.bias != nullptr) reads.push_back(Floats(a.bias, a.m));
    if (a.z != nullptr) reads.push_back(Floats(a.z, y_count));
    return Launch(stream, "conv2d_half", std::move(reads),
                  {Halves(a.y_half, y_count), Floats(a.y, y_count)}, [=] {
                    const std::vector<float> x = Widen(a.x_half, x_count);
                    const std::vector<float> w = Widen(a.w_half, w_count);
                    ConvArgs wide = a;
                    wide.x = x.data();
                    wide.w = w.data();
                    wide.bias = nullptr;
                    wide.z = nullptr;
                    wide.activation = {};
                    RunConv(wide);  // into y, then rounded through y_half
                    const kc::Activation act = ToKernel(a.activation.kind);
                    const int64_t spatial = a.out_h * a.out_w;
                    for (int64_t i = 0; i < y_count; ++i) {
                      a.y_half[i] = kc::FloatToHalfBits(a.y[i]);
                      float v = kc::HalfBitsToFloat(a.y_half[i]);
                      if (a.bias != nullptr) v += a.bias[(i / spatial) % a.m];
                      if (a.z != nullptr) v += a.z[i];
                      a.y[i] = kc::ApplyActivation(act, v, a.activation.alpha,
                                                   a.activation.beta);
                    }
                  });
  }

  absl::Status Pool2D(DeviceStream& stream, const Pool2DArgs& args,
                      const float* x, float* y) override {
    const kc::Pool2DGeometry g = ToGeometry(args);
    const int64_t planes = args.planes;
    return Launch(stream, "pool2d", {Floats(x, planes * g.in_h * g.in_w)},
                  {Floats(y, planes * g.out_h * g.out_w)}, [=] {
                    for (int64_t p = 0; p < planes; ++p) {
                      const float* plane = x + p * g.in_h * g.in_w;
                      float* out = y + p * g.out_h * g.out_w;
                      for (int64_t i = 0; i < g.out_h; ++i)
                        for (int64_t j = 0; j < g.out_w; ++j)
                          out[i * g.out_w + j] = kc::PoolValue(g, plane, i, j);
                    }
                  });
  }

  absl::Status Lrn(DeviceStream& stream, const float* x, float* y,
                   int64_t batch, int64_t channels, int64_t spatial,
                   int64_t size, float alpha, float beta, float bias) override {
    const int64_t n = batch * channels * spatial;
    return Launch(stream, "lrn", {Floats(x, n)}, {Floats(y, n)}, [=] {
      const int64_t image = channels * spatial;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t b = i / image, r = i % image;
        y[i] = kc::LrnValue(x + b * image, channels, spatial, r / spatial,
                            r % spatial, size, alpha, beta, bias);
      }
    });
  }

  absl::Status ChannelAffine(DeviceStream& stream, const float* x,
                             const float* scale, const float* shift, float* y,
                             int64_t batch, int64_t channels, int64_t spatial,
                             ActivationSpec act) override {
    const int64_t n = batch * channels * spatial;
    std::vector<Region> reads = {Floats(x, n)};
    if (scale != nullptr) reads.push_back(Floats(scale, channels));
    if (shift != nullptr) reads.push_back(Floats(shift, channels));
    return Launch(
        stream, "channel_affine", std::move(reads), {Floats(y, n)}, [=] {
          const kc::Activation f = ToKernel(act.kind);
          for (int64_t i = 0; i < n; ++i) {
            const int64_t c = kc::ChannelOf(i, channels, spatial);
            const float v = x[i] * (scale != nullptr ? scale[c] : 1.0f) +
                            (shift != nullptr ? shift[c] : 0.0f);
            y[i] = kc::ApplyActivation(f, v, act.alpha, act.beta);
          }
        });
  }

  absl::Status Copy2D(DeviceStream& stream, void* dst, size_t dst_pitch,
                      const void* src, size_t src_pitch, size_t row_bytes,
                      size_t rows) override {
    if (rows == 0) return absl::OkStatus();
    const Region read = {src, (rows - 1) * src_pitch + row_bytes};
    const Region write = {dst, (rows - 1) * dst_pitch + row_bytes};
    return Launch(stream, "copy2d", {read}, {write}, [=] {
      for (size_t r = 0; r < rows; ++r) {
        std::memcpy(static_cast<char*>(dst) + r * dst_pitch,
                    static_cast<const char*>(src) + r * src_pitch, row_bytes);
      }
    });
  }

 private:
  static void RunGemm(const GemmArgs& g) {
    const kc::Activation act = ToKernel(g.activation.kind);
    for (int64_t b = 0; b < g.batch; ++b) {
      const float* a = g.a + b * g.stride_a;
      const float* w = g.b + b * g.stride_b;
      float* c = g.c + b * g.stride_c;
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < g.k; ++p) {
            const float av = g.trans_a ? a[p * g.m + i] : a[i * g.k + p];
            const float bv = g.trans_b ? w[j * g.k + p] : w[p * g.n + j];
            sum += double{av} * bv;
          }
          float v = static_cast<float>(g.alpha * sum);
          if (g.bias != nullptr) v += g.bias[j];
          c[i * g.n + j] = kc::ApplyActivation(act, v, g.activation.alpha,
                                               g.activation.beta);
        }
      }
    }
  }

  // Direct convolution, accumulating in double, then bias and activation.
  static void RunConv(const ConvArgs& a) {
    const int64_t cg = a.c / a.groups, mg = a.m / a.groups;
    const kc::Activation act = ToKernel(a.activation.kind);
    for (int64_t n = 0; n < a.n; ++n) {
      for (int64_t m = 0; m < a.m; ++m) {
        const int64_t g = m / mg;
        for (int64_t p = 0; p < a.out_h; ++p) {
          for (int64_t q = 0; q < a.out_w; ++q) {
            double sum = 0;
            for (int64_t c = 0; c < cg; ++c) {
              const float* plane =
                  a.x + ((n * a.c) + g * cg + c) * a.in_h * a.in_w;
              const float* filter =
                  a.w + (m * cg + c) * a.kernel_h * a.kernel_w;
              for (int64_t r = 0; r < a.kernel_h; ++r) {
                const int64_t h = p * a.stride_h - a.pad_top + r * a.dilation_h;
                if (h < 0 || h >= a.in_h) continue;
                for (int64_t s = 0; s < a.kernel_w; ++s) {
                  const int64_t w =
                      q * a.stride_w - a.pad_left + s * a.dilation_w;
                  if (w < 0 || w >= a.in_w) continue;
                  sum += double{plane[h * a.in_w + w]} *
                         filter[r * a.kernel_w + s];
                }
              }
            }
            const int64_t at = ((n * a.m + m) * a.out_h + p) * a.out_w + q;
            float v = static_cast<float>(sum);
            if (a.bias != nullptr) v += a.bias[m];
            if (a.z != nullptr) v += a.z[at];
            a.y[at] = kc::ApplyActivation(act, v, a.activation.alpha,
                                          a.activation.beta);
          }
        }
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
