// DeviceKernels: the operator primitives one device offers a GraphProgram
// (graph_program.h), enqueued on a stream of that device over its memory.
// Tensors are dense, row-major float32 unless a method says otherwise.
//
// Implementations: CUDA (the plugin: cuBLASLt and kernels/cuda/) and, for
// tests, the simulated device's (host functions run on its streams). Each
// executor instance owns one DeviceKernels (library handles, workspaces) and
// calls it from one thread at a time, with streams of its own device.
// A method that returns an error enqueued nothing; errors while the work
// runs surface on the stream as the device's sticky fault (device.h).
#ifndef COALESCE_ENGINE_DEVICE_DEVICE_KERNELS_H_
#define COALESCE_ENGINE_DEVICE_DEVICE_KERNELS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/data_type.h"
#include "engine/device/device.h"
#include "engine/device/tuning_cache.h"
#include "engine/schema/resize_schema.h"
#include "engine/shape.h"

namespace coalesce {

// Elementwise functions. kGeluErf is 0.5 x (1 + erf(x / sqrt 2)) (ONNX Gelu,
// approximate "none": what exporters emit); kGeluTanh is approximate "tanh".
enum class DeviceActivation {
  kIdentity,
  kRelu,
  kSigmoid,
  kTanh,
  kGeluErf,
  kGeluTanh,
  kLeakyRelu,  // x >= 0 ? x : alpha x
  kClip,       // min(max(x, alpha), beta)
  kErf,
  kPow,  // x^alpha
  kSqrt,
  kExp,
  kHardSigmoid,  // max(0, min(1, alpha x + beta))
  kHardSwish,    // x max(0, min(1, x / 6 + 1/2))
  kReciprocal,
  kNeg,
  kAbs,
  kSin,
  kCos,
  kFloor,
  kCeil,
  kSilu,  // x sigmoid(alpha x) (SiLU, Swish: alpha 1; quick GELU: 1.702)
};

struct ActivationSpec {
  DeviceActivation kind = DeviceActivation::kIdentity;
  float alpha = 0.0f;
  float beta = 0.0f;
};

enum class DeviceBinaryOp { kAdd, kSub, kMul, kDiv };

// Elementwise operations on typed tensors: the integer and boolean
// arithmetic of attention masks and position ids (DeviceKernels::Typed).
// Results are defined for every input, as on the CPU engine: integers wrap,
// x / 0 is 0, Mod is floored and Fmod truncated (a remainder by 0 is 0 for
// integers, NaN for floats), float Max and Min propagate NaN.
enum class DeviceTypedOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kFmod,
  kMax,
  kMin,
  kNeg,  // unary
  kAbs,  // unary
  // Results are bool:
  kEqual,
  kLess,
  kLessOrEqual,
  kGreater,
  kGreaterOrEqual,
  kAnd,       // bool operands
  kOr,        // bool operands
  kXor,       // bool operands
  kNot,       // unary, bool
  kIsNaN,     // unary, float32
  kIsInf,     // unary, float32, either sign
  kIsPosInf,  // unary, float32
  kIsNegInf,  // unary, float32
};

inline bool IsUnary(DeviceTypedOp op) {
  return op == DeviceTypedOp::kNeg || op == DeviceTypedOp::kAbs ||
         op >= DeviceTypedOp::kNot;
}

// A 16-bit float value as its bits: IEEE 754 binary16 (CUDA's __half
// layout), or bfloat16 where the storage says so (DeviceFloat::kBFloat16);
// kernels/cuda/half_math.h converts on the host.
using Half = uint16_t;

// How a floating tensor is stored on the device: float32, float16 (FP16
// mode keeps activations in float16 between operators: device_storage.h)
// or bfloat16 (BF16 mode, likewise). Primitives that take FloatIn/FloatOut
// read and write any of them, computing in float32 and rounding to nearest
// even when they store 16 bits; the operands of one call use at most one
// 16-bit type.
enum class DeviceFloat : uint8_t { kFloat, kHalf, kBFloat16 };

inline size_t DeviceFloatBytes(DeviceFloat type) {
  return type == DeviceFloat::kFloat ? sizeof(float) : sizeof(Half);
}

// "fp32", "fp16", "bf16": for plans, logs and error messages.
inline const char* DeviceFloatName(DeviceFloat type) {
  switch (type) {
    case DeviceFloat::kHalf:
      return "fp16";
    case DeviceFloat::kBFloat16:
      return "bf16";
    case DeviceFloat::kFloat:
      break;
  }
  return "fp32";
}

// A floating tensor a primitive reads: its address and storage. Converts
// from float* and Half*, so float32 callers read as before.
struct FloatIn {
  const void* data = nullptr;
  DeviceFloat type = DeviceFloat::kFloat;
  FloatIn() = default;
  FloatIn(std::nullptr_t) {}            // NOLINT: implicit
  FloatIn(const float* p) : data(p) {}  // NOLINT: implicit
  FloatIn(const Half* p) : data(p), type(DeviceFloat::kHalf) {}  // NOLINT
  FloatIn(const void* p, DeviceFloat t) : data(p), type(t) {}
  bool is_16bit() const { return type != DeviceFloat::kFloat; }
};

// A floating tensor a primitive writes.
struct FloatOut {
  void* data = nullptr;
  DeviceFloat type = DeviceFloat::kFloat;
  FloatOut() = default;
  FloatOut(std::nullptr_t) {}                               // NOLINT: implicit
  FloatOut(float* p) : data(p) {}                           // NOLINT: implicit
  FloatOut(Half* p) : data(p), type(DeviceFloat::kHalf) {}  // NOLINT
  FloatOut(void* p, DeviceFloat t) : data(p), type(t) {}
  bool is_16bit() const { return type != DeviceFloat::kFloat; }
};

// C[i] = act(alpha * op(A[i]) op(B[i]) + bias + Z[i]) for i < batch, where
// op transposes when asked, op(A) is m x k, op(B) is k x n, C is m x n, all
// row-major and packed (leading dimension = row length). Matrix i of X
// starts at X + i * stride_x elements; a stride of 0 repeats one matrix.
// `bias`, when not null, has n elements added to every row (before act).
// `z`, when not null, is a residual laid out as C (stride_c) and of C's
// type, added before act (cuBLASLt's C with beta 1).
// Computed in float32 throughout (no TF32, unless the kernels' precision
// allows it). With a_half and b_half set (FP16 and BF16 modes), the product
// reads them (of type half_type, float16 or bfloat16, laid out as a and b
// would be) instead of a and b, multiplies in 16 bits and accumulates in
// float32. c is float32, or half_type (16-bit modes only: the result
// rounded after bias and act, or also before an act the implementation
// applies separately); bias, when given, has c's type.
struct GemmArgs {
  const float* a = nullptr;
  const float* b = nullptr;
  FloatIn bias = {};
  FloatIn z = {};
  FloatOut c = {};
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  float alpha = 1.0f;
  const Half* a_half = nullptr;
  const Half* b_half = nullptr;
  // a_half's and b_half's: kHalf or kBFloat16, always set with them (the
  // default fails the call, so a missing type is never read as another).
  DeviceFloat half_type = DeviceFloat::kFloat;
  // Implementations fuse what their library fuses (cuBLASLt: Relu, and
  // GeluTanh: its GELU epilogue is the tanh form, which also stands for
  // GeluErf into a 16-bit c: within 4.8e-4, under 16-bit rounding) and
  // apply anything else after the product.
  ActivationSpec activation;
};

// A 2-D convolution: x [n, c, in_h, in_w], w [m, c / groups, kernel_h,
// kernel_w], y [n, m, out_h, out_w]; channels_last: x [n, in_h, in_w, c],
// w [m, kernel_h, kernel_w, c / groups] (cuDNN's KRSC), y [n, out_h, out_w,
// m]. Symmetric padding (pad_top rows above and below, pad_left columns
// left and right). Then, per output channel,
//   y = act(conv(x, w) + bias[m] + z)
// where bias (float32, m elements) and z (a residual of y's shape and
// layout, never y) may be null.
// Precision: x and w are both float32, or both of one 16-bit type (FP16 or
// BF16 mode). In float32 everything is float32 (TF32 when the kernels'
// precision allows). In 16 bits the convolution accumulates in float32 and
// its result is rounded to x's type (as cuDNN stores it); bias, z and act
// are applied in float32 and y is rounded to its own type (a fused
// implementation may skip the first rounding: within 16-bit tolerance). A
// 16-bit convolution with a float32 y needs `y_scratch`: x's type, y's
// element count.
struct ConvArgs {
  FloatIn x = {};
  FloatIn w = {};
  const float* bias = nullptr;
  FloatIn z = {};
  FloatOut y = {};
  Half* y_scratch = nullptr;
  int64_t n = 0, c = 0, in_h = 0, in_w = 0;
  int64_t m = 0, kernel_h = 0, kernel_w = 0, out_h = 0, out_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
  int64_t dilation_h = 1, dilation_w = 1, groups = 1;
  bool channels_last = false;
  ActivationSpec activation;
};

// 2-D max or average pooling of `planes` planes [in_h, in_w] into
// [out_h, out_w]; pads may differ at each end (the output size already
// accounts for ceil_mode). Average divides by the positions inside the
// input, or inside the padded input with count_include_pad.
// channels_last: x is [planes / channels, in_h, in_w, channels] and y
// [planes / channels, out_h, out_w, channels] (NHWC); else planes follow
// each other (NCHW). x and y are float32 or 16-bit (FloatIn/FloatOut),
// computed in float32.
struct Pool2DArgs {
  int64_t planes = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t channels = 1;  // divides planes; only read with channels_last
  bool channels_last = false;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool max = true;
  bool count_include_pad = false;
};

// GatherND: data viewed as [batches, dims..., slice], where dims are the k
// axes an index tuple selects (k <= 8); indices (int64) as [batches *
// rows_per_batch, k]; y as [batches * rows_per_batch, slice]. Negative
// indices count from the end; a tuple with an index out of range gives
// zeros.
struct GatherNdArgs {
  const void* data = nullptr;
  size_t element_bytes = 4;  // 1, 2, 4 or 8
  const int64_t* indices = nullptr;
  void* y = nullptr;
  int64_t batches = 1, rows_per_batch = 0, slice = 1;
  std::vector<int64_t> dims;
};

// GatherElements: y[p] = data[p with its `axis` coordinate replaced by
// indices[p]] for every position p of indices_shape (y's shape; rank <= 8).
// Negative indices count from the end; one out of range gives zero.
struct GatherElementsArgs {
  const void* data = nullptr;
  Shape data_shape;
  size_t element_bytes = 4;  // 1, 2, 4 or 8
  const void* indices = nullptr;
  bool indices_int64 = true;  // else int32
  Shape indices_shape;
  int64_t axis = 0;
  void* y = nullptr;
};

// Pad: x [x_shape] into y [y_shape], where y's axis d holds x's axis d with
// begin[d] elements before it (negative: cropped) and its end padded to
// y's size. Constant mode writes the low element_bytes bytes of `fill`;
// edge repeats the nearest element; reflect mirrors without the edge.
enum class DevicePadMode { kConstant, kEdge, kReflect };

struct PadArgs {
  const void* x = nullptr;
  Shape x_shape;
  std::vector<int64_t> begin;
  Shape y_shape;  // rank <= 8, x's rank
  DevicePadMode mode = DevicePadMode::kConstant;
  size_t element_bytes = 4;  // 1, 2, 4 or 8
  uint64_t fill = 0;
  void* y = nullptr;
};

// QuantizeLinear (x float32, y `quantized`) or DequantizeLinear (x
// `quantized`, y float32) over [outer, channels, inner] with one float32
// scale and zero point (of the quantized type; null: 0) per channel. INT8,
// UINT8, INT16, UINT16; INT32 to dequantize only. Rounding, saturation and
// NaN as on the CPU (engine/schema/quantize_schema.h).
struct QuantizeArgs {
  bool quantize = true;
  DataType quantized = DataType::kUint8;
  const void* x = nullptr;
  const float* scale = nullptr;
  const void* zero_point = nullptr;
  void* y = nullptr;
  int64_t outer = 1, channels = 1, inner = 1;
};

// Resize of a float32 tensor x (axes[d].in) into y (axes[d].out), rank <=
// 8: nearest or N-linear, with the coordinate transformations and nearest
// rounding of engine/schema/resize_schema.h except tf_crop_and_resize; no
// cubic, antialias or exclude_outside. Linear taps past an edge read the
// edge element, as on the CPU.
struct ResizeArgs {
  const float* x = nullptr;
  float* y = nullptr;
  std::vector<ResizeAxisSpec> axes;
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordinate coordinate = ResizeCoordinate::kHalfPixel;
  NearestRounding nearest = NearestRounding::kRoundPreferFloor;
};

// Binary: y = a op b with NumPy broadcasting of the two shapes (rank <= 8)
// to y's, computed in float32; each of a, b and y float32 or 16-bit. y may
// equal a or b when that input is not broadcast and has y's type.
struct BinaryArgs {
  DeviceBinaryOp op = DeviceBinaryOp::kAdd;
  FloatIn a = {};
  Shape a_shape;
  FloatIn b = {};
  Shape b_shape;
  FloatOut y = {};
};

// Transpose: y = x with its axes permuted (y's axis i is x's axis
// perm[i]), rank <= 8.
struct TransposeArgs {
  const void* x = nullptr;
  Shape x_shape;
  std::vector<int64_t> perm;  // x's rank
  size_t element_bytes = 4;   // 1, 2, 4 or 8
  void* y = nullptr;
};

// Broadcast (ONNX Expand): y = x broadcast to y_shape by NumPy's rules
// (x's rank <= y's, counted from the right; each x dim 1 or y's), rank <= 8.
struct BroadcastArgs {
  const void* x = nullptr;
  Shape x_shape;
  Shape y_shape;
  size_t element_bytes = 4;  // 1, 2, 4 or 8
  void* y = nullptr;
};

// LayerNormalization of each row of a [rows, cols] matrix:
// (x - mean) / sqrt(var + epsilon) * scale + bias, statistics in float32.
// x and y are float32 or 16-bit each (statistics and the affine map in
// float32; y rounded once); y may equal x (same type) when there is no
// residual.
// With residual.data set (a residual Add fused into its LayerNorm,
// plan_lowering.h), the row normalized is s = x + residual instead, where
// residual is [residual_rows, cols] repeated over x's rows (rows a multiple
// of residual_rows: 1 row, or a position embedding broadcast over the
// batch). s is rounded to sum.type first (the Add's storage), so the fused
// step computes exactly what the Add then the LayerNorm would, and it is
// written to sum.data when that is set (the Add's result has other
// readers). y and sum overlap no input and each other.
struct LayerNormArgs {
  FloatIn x = {};
  const float* scale = nullptr;  // cols elements
  const float* bias = nullptr;   // cols elements, or null (0)
  FloatOut y = {};
  int64_t rows = 0, cols = 0;
  float epsilon = 1e-5f;  // ONNX's default
  FloatIn residual = {};  // data null: none
  int64_t residual_rows = 0;
  FloatOut sum = {};  // type: how s is rounded; data null: not written
};

// Gather of `data`, viewed as [outer, axis_dim, inner] elements, by
// `num_indices` indices into y [outer, num_indices, inner]. Negative indices
// count from the end; an index out of range gives zeros (the device cannot
// fail one batch from inside a kernel).
struct GatherArgs {
  const void* data = nullptr;
  size_t element_bytes = 4;  // 1, 2, 4 or 8
  int64_t outer = 1, axis_dim = 0, inner = 1;
  const void* indices = nullptr;
  bool indices_int64 = true;  // else int32
  int64_t num_indices = 0;
  void* y = nullptr;
};

// Typed: y = op(a, b) with a and b broadcast to y_shape by NumPy's rules
// (rank <= 8); unary ops read a only (b may be null, b_shape empty).
// Operands are of `type`: float32, int64 or int32 (bool for And, Or, Xor
// and Not); y has that type, or is bool for comparisons, logic and the
// IsNaN/IsInf tests.
struct TypedArgs {
  DeviceTypedOp op = DeviceTypedOp::kAdd;
  DataType type = DataType::kFp32;
  const void* a = nullptr;
  Shape a_shape;
  const void* b = nullptr;
  Shape b_shape;
  void* y = nullptr;
  Shape y_shape;
};

// Where: y = cond ? x : z (ONNX Where), each broadcast to y_shape (rank
// <= 8); cond is bool.
struct WhereArgs {
  const void* cond = nullptr;
  Shape cond_shape;
  const void* x = nullptr;
  Shape x_shape;
  const void* z = nullptr;
  Shape z_shape;
  size_t element_bytes = 4;  // of x, z and y: 1, 2, 4 or 8
  void* y = nullptr;
  Shape y_shape;
};

// Cast: y = x converted from `from` to `to` (each float32, int64, int32,
// uint8 or bool) for `count` elements, by the CPU engine's Cast rules: to
// bool is "!= 0", float to integer truncates (NaN: 0) and saturates,
// integers wrap.
struct CastArgs {
  DataType from = DataType::kFp32;
  const void* x = nullptr;
  DataType to = DataType::kFp32;
  void* y = nullptr;
  int64_t count = 0;
};

// StridedCopy: y = the elements of x at offset + sum over d of coordinate_d
// * strides[d], for every coordinate of y_shape: a strided view (Slice with
// any steps, a part of Split), rank <= 8. Strides may be negative; every
// element read must lie in x's x_count elements.
struct StridedCopyArgs {
  const void* x = nullptr;
  int64_t x_count = 0;           // elements
  int64_t offset = 0;            // elements
  std::vector<int64_t> strides;  // elements, y's rank
  Shape y_shape;
  size_t element_bytes = 4;  // 1, 2, 4 or 8
  void* y = nullptr;
};

// CumSum: running sums along the middle axis of [outer, n, inner] (ONNX
// CumSum) of `type`: float32 (accumulated in double), int64 or int32
// (wrapping).
struct CumSumArgs {
  DataType type = DataType::kFp32;
  const void* x = nullptr;
  void* y = nullptr;
  int64_t outer = 1, n = 0, inner = 1;
  bool exclusive = false;  // leave out the element itself
  bool reverse = false;    // sum from the end
};

// ArgMax: y[o, i] = the index of the largest x[o, :, i] of [outer, n,
// inner], x of `type` (float32, int64 or int32); ties go to the first
// index, or the last with select_last.
struct ArgMaxArgs {
  DataType type = DataType::kFp32;
  const void* x = nullptr;
  int64_t* y = nullptr;
  int64_t outer = 1, n = 0, inner = 1;
  bool select_last = false;
};

// LRN across channels of [batch, channels, spatial]: x / (bias + alpha /
// size * sum of x^2 over the `size` channels around) ^ beta. Defaults as
// ONNX's.
struct LrnArgs {
  const float* x = nullptr;
  float* y = nullptr;
  int64_t batch = 0, channels = 0, spatial = 0;
  int64_t size = 1;
  float alpha = 1e-4f, beta = 0.75f, bias = 1.0f;
};

// ChannelAffine: y = act(x * scale[c] + shift[c]) over [batch, channels,
// spatial], or [batch, spatial, channels] with channels_last; computed in
// float32, x and y each float32 or 16-bit; y may equal x (same type).
struct ChannelAffineArgs {
  FloatIn x = {};
  const float* scale = nullptr;  // channels elements, or null (1)
  const float* shift = nullptr;  // channels elements, or null (0)
  FloatOut y = {};
  int64_t batch = 0, channels = 0, spatial = 0;
  bool channels_last = false;
  ActivationSpec activation;
};

// Copy2D: `rows` rows of `row_bytes` bytes, from rows `src_pitch` bytes
// apart to rows `dst_pitch` bytes apart, device to device (Concat).
struct Copy2DArgs {
  void* dst = nullptr;
  size_t dst_pitch = 0;
  const void* src = nullptr;
  size_t src_pitch = 0;
  size_t row_bytes = 0;
  size_t rows = 0;
};

// Attention: scaled-dot-product attention over strided views (the fused
// attention of attention_pattern.h; the head split and merge are strides):
//   out[b, h, i, :] = sum_j p[b, h, i, j] v[b, h, j, :],
//   p[b, h, i, :]   = softmax_j(scale * q[b, h, i, :] . k[b, h, j, :]
//                               + mask[b, h, i, j])
// Each operand's strides are elements over [batch, heads, rows, cols]:
// rows are sequence positions and cols the head dimension (stride 1) for
// q, k, v and out; query and key positions for the mask (0 where it
// broadcasts; mask.data null: none). q, k and v share one type; the mask
// and out may each be float32 or 16-bit. The softmax's max and sum and
// every accumulation are float32; in 16 bits the probabilities are rounded
// to 16 bits before the second product (as flash attention does). A row
// whose scores are all -inf gives 0 when zero_masked_rows, else NaN; with
// no keys at all (kv_len 0) out is 0, the empty product's sum.
// Packed rows (token packing, engine/packed_rows.h), when `pack` is set:
// q, k, v and out are views of packed_rows rows (their row and head
// strides; batch strides unused), and batch entry b's rows are those
// engine/packing_indices.h's PackedRealRows finds in the device int64 pack
// index `pack` (packed_rows entries) of a [batch, q_len] mask: as many
// queries as keys, the mask read at the rows' positions in their
// sequences. Out's rows past the real ones (the bucket's fillers, which
// the model computes and never reads) are written as zeros.
// REQUIRES: out overlaps no input; head_dim <= kMaxAttentionHeadDim; with
// pack, q_len == kv_len and packed_rows >= 1.
inline constexpr int64_t kMaxAttentionHeadDim = 256;
struct AttentionArgs {
  FloatIn q = {}, k = {}, v = {}, mask = {};
  FloatOut out = {};
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  std::array<int64_t, 4> q_strides = {}, k_strides = {}, v_strides = {},
                         mask_strides = {}, out_strides = {};
  float scale = 1.0f;
  bool zero_masked_rows = false;
  const int64_t* pack = nullptr;  // null: padded
  int64_t packed_rows = 0;
};

// How a device may compute float32 products. kFp32 (the default): exact
// float32 (no TF32). kTf32: GEMMs and convolutions may use TF32 tensor cores
// (10-bit mantissa inputs, float32 accumulation), a per-model opt-in. (FP16
// products are chosen per call, by the args' 16-bit operands.)
enum class DevicePrecision { kFp32, kTf32 };

struct DeviceKernelOptions {
  DevicePrecision precision = DevicePrecision::kFp32;
  // Where measured algorithm choices are looked up and recorded
  // (tuning_cache.h); null: measure each shape once per instance and keep
  // nothing. Shared by the instances on one device.
  std::shared_ptr<TuningCache> tuning_cache;
};

class DeviceKernels {
 public:
  virtual ~DeviceKernels() = default;

  // "cuBLASLt 13.0.0 (libcublasLt.so.13 from ...)": for logs and gpu-check.
  virtual std::string description() const = 0;

  // Each primitive enqueues the work its Args describe on `stream`.
  virtual absl::Status Gemm(DeviceStream& stream, const GemmArgs& args) = 0;

  // y = f(x) for `count` elements, computed in float32; x and y each
  // float32 or 16-bit; y may equal x (same type).
  virtual absl::Status Activation(DeviceStream& stream, ActivationSpec f,
                                  FloatIn x, FloatOut y, int64_t count) = 0;

  virtual absl::Status Binary(DeviceStream& stream, const BinaryArgs& args) = 0;

  // Softmax over each row of a [rows, cols] matrix; x and y float32 or 16-bit
  // each, the row's max and sum in float32.
  virtual absl::Status Softmax(DeviceStream& stream, FloatIn x, FloatOut y,
                               int64_t rows, int64_t cols) = 0;

  virtual absl::Status Transpose(DeviceStream& stream,
                                 const TransposeArgs& args) = 0;

  virtual absl::Status Broadcast(DeviceStream& stream,
                                 const BroadcastArgs& args) = 0;

  virtual absl::Status LayerNorm(DeviceStream& stream,
                                 const LayerNormArgs& args) = 0;

  virtual absl::Status Gather(DeviceStream& stream, const GatherArgs& args) = 0;

  // y = x in 16-bit `type` (kHalf or kBFloat16), rounded to nearest even
  // (beyond its range: an infinity), for `count` elements.
  virtual absl::Status ToHalf(DeviceStream& stream, const float* x, Half* y,
                              int64_t count, DeviceFloat type) = 0;

  // y = float(x), x in 16-bit `type`, exact, for `count` elements.
  virtual absl::Status FromHalf(DeviceStream& stream, const Half* x, float* y,
                                int64_t count, DeviceFloat type) = 0;

  virtual absl::Status Typed(DeviceStream& stream, const TypedArgs& args) = 0;

  virtual absl::Status Where(DeviceStream& stream, const WhereArgs& args) = 0;

  virtual absl::Status Cast(DeviceStream& stream, const CastArgs& args) = 0;

  virtual absl::Status StridedCopy(DeviceStream& stream,
                                   const StridedCopyArgs& args) = 0;

  virtual absl::Status Pad(DeviceStream& stream, const PadArgs& args) = 0;

  virtual absl::Status Quantize(DeviceStream& stream,
                                const QuantizeArgs& args) = 0;

  virtual absl::Status Resize(DeviceStream& stream, const ResizeArgs& args) = 0;

  virtual absl::Status GatherNd(DeviceStream& stream,
                                const GatherNdArgs& args) = 0;

  virtual absl::Status GatherElements(DeviceStream& stream,
                                      const GatherElementsArgs& args) = 0;

  virtual absl::Status CumSum(DeviceStream& stream, const CumSumArgs& args) = 0;

  virtual absl::Status ArgMax(DeviceStream& stream, const ArgMaxArgs& args) = 0;

  virtual absl::Status Conv2D(DeviceStream& stream, const ConvArgs& args) = 0;

  virtual absl::Status Pool2D(DeviceStream& stream, const Pool2DArgs& args,
                              FloatIn x, FloatOut y) = 0;

  virtual absl::Status Lrn(DeviceStream& stream, const LrnArgs& args) = 0;

  virtual absl::Status ChannelAffine(DeviceStream& stream,
                                     const ChannelAffineArgs& args) = 0;

  virtual absl::Status Copy2D(DeviceStream& stream, const Copy2DArgs& args) = 0;

  virtual absl::Status Attention(DeviceStream& stream,
                                 const AttentionArgs& args) = 0;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_DEVICE_KERNELS_H_
