// libFuzzer target: the bytes as a serialized ONNX ModelProto, through what
// serving a model does: Model::LoadFromBytes (parsing, validation, the
// optimizer passes), the execution plans of batches 1 and 2 (through a
// PlanCache, as the CPU executor builds them), and one batch of batch 1 on a
// CPU executor with one intra-op thread, its inputs derived from the bytes.
// None may crash, read out of bounds, overflow or leak, whatever the model
// is; errors are fine.
//
// Budgets keep every input well under scripts/fuzz's -timeout=10 and
// -rss_limit_mb=2048; a model over one is skipped, not reported:
//   - a shape set is planned only when its NeutralPlan (shapes and sizes,
//     nothing large allocated) holds at most kMaxPlanBytes of tensors and
//     costs at most kMaxWork;
//   - a batch runs only when its inputs take at most kMaxInputBytes and the
//     executor's buffers (arena, inputs, outputs) at most kMaxPlanBytes.
// Loading has no budget here: the loader itself must refuse what a file
// cannot back (a tensor larger than its data, a folded constant far larger
// than its inputs; engine/onnx_import.cc, constant_folding.cc).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/cpu_executor.h"
#include "engine/execution_plan.h"
#include "engine/model.h"
#include "engine/neutral_planner.h"
#include "engine/onnx_import.h"
#include "engine/plan_cache.h"
#include "engine/string_ref.h"
#include "kernels/cpu/half.h"
#include "kernels/cpu/threading.h"
#include "onnx/onnx_pb.h"

namespace {

using coalesce::DataType;
using coalesce::Model;
using coalesce::PlannedValue;
using coalesce::PlanNode;
using coalesce::Shape;

// Tensor bytes one plan may hold (every value's, summed), and bytes an
// executor may reserve for one batch.
constexpr uint64_t kMaxPlanBytes = uint64_t{256} << 20;
// Bytes of one batch's inputs: larger models are planned but not run.
constexpr uint64_t kMaxInputBytes = uint64_t{1} << 20;
// Rough multiply-adds of a plan (NodeWork). Index-heavy kernels (LRN,
// DepthToSpace) under the sanitizers and coverage take about 30 ns per unit,
// so 2^26 keeps a run near 2 s, a fifth of -timeout.
constexpr uint64_t kMaxWork = uint64_t{1} << 26;
// The size of a symbolic dim other than the leading (batch) one.
constexpr int64_t kSymbolicDim = 3;
// Longest string an op makes at run time (Cast to STRING writes at most 48
// characters) or this target writes into a BYTES input.
constexpr uint64_t kMaxMadeStringBytes = 64;
constexpr uint64_t kSaturated = UINT64_MAX;

uint64_t SatAdd(uint64_t a, uint64_t b) {
  uint64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? kSaturated : sum;
}

uint64_t SatMul(uint64_t a, uint64_t b) {
  uint64_t product;
  return __builtin_mul_overflow(a, b, &product) ? kSaturated : product;
}

uint64_t Elements(const Shape& shape) {
  std::optional<int64_t> count = coalesce::ElementCount(shape);
  return count ? static_cast<uint64_t>(*count) : kSaturated;
}

// Full input shapes: a symbolic leading dim is the batch, any other one
// kSymbolicDim.
std::vector<Shape> InputShapes(const Model& model, int64_t batch) {
  std::vector<Shape> shapes;
  for (const coalesce::TensorSpec& input : model.signature().inputs) {
    Shape shape = input.dims;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] < 0) shape[d] = d == 0 ? batch : kSymbolicDim;
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

const coalesce::TensorInfo* NodeInput(const PlanNode& node,
                                      const std::vector<PlannedValue>& values,
                                      size_t i) {
  if (i >= node.inputs.size() || node.inputs[i] < 0) return nullptr;
  return &values[node.inputs[i]].info;
}

// The extent each output element of a contraction or window reduces over
// (ConvTranspose: each input element spreads over); 1 for the other ops.
uint64_t ReducedExtent(const PlanNode& node,
                       const std::vector<PlannedValue>& values) {
  const std::string& op = *node.op_type;
  const coalesce::TensorInfo* a = NodeInput(node, values, 0);
  const coalesce::TensorInfo* w = NodeInput(node, values, 1);
  if (op == "MatMul" || op == "FusedMatMul" || op == "Gemm" ||
      op == "FusedGemm") {
    uint64_t k = 1;  // K is one of A's dims, whichever transA picks
    for (int64_t d : a != nullptr ? a->shape : Shape{})
      k = std::max<uint64_t>(k, d > 0 ? d : 1);
    return k;
  }
  if ((op == "Conv" || op == "FusedConv" || op == "ConvTranspose") &&
      w != nullptr && !w->shape.empty() && w->shape[0] > 0)
    return Elements(w->shape) / static_cast<uint64_t>(w->shape[0]);
  if (op == "MaxPool" || op == "AveragePool") {
    uint64_t extent = 1;
    absl::StatusOr<std::vector<int64_t>> kernel =
        node.attributes->GetInts("kernel_shape");
    for (int64_t k : kernel.ok() ? *kernel : std::vector<int64_t>{})
      extent = SatMul(extent, k > 0 ? static_cast<uint64_t>(k) : 1);
    return extent;
  }
  if (op == "LRN") {
    absl::StatusOr<int64_t> size = node.attributes->GetInt("size", 1);
    return size.ok() && *size > 0 ? static_cast<uint64_t>(*size) : 1;
  }
  if (op == "Resize" || op == "Upsample") return 64;  // cubic taps
  return 1;
}

// Elements a value holds in memory (its shape's count, except for a constant
// whose shape overstates its data).
uint64_t HeldElements(const PlannedValue& v) {
  const size_t size = coalesce::StorageByteSize(v.info.dtype);
  return size == 0 ? 0 : v.byte_size / size;
}

// Rough multiply-adds of one node: the elements it reads and writes, plus
// the larger of its first input and output times ReducedExtent. An
// overestimate only skips running a model.
uint64_t NodeWork(const PlanNode& node,
                  const std::vector<PlannedValue>& values) {
  uint64_t touched = 0, largest = 0;
  for (const std::vector<int>* ids : {&node.inputs, &node.outputs}) {
    for (size_t i = 0; i < ids->size(); ++i) {
      if ((*ids)[i] < 0) continue;
      const uint64_t n = HeldElements(values[(*ids)[i]]);
      touched = SatAdd(touched, n);
      if (i == 0) largest = std::max(largest, n);
    }
  }
  return SatAdd(touched, SatMul(largest, ReducedExtent(node, values)));
}

// Builds the NeutralPlan of `shapes` (sizes only) and checks the budget.
bool PlanFits(const std::shared_ptr<const Model>& model,
              const std::vector<Shape>& shapes) {
  absl::StatusOr<std::shared_ptr<const coalesce::NeutralPlan>> plan =
      coalesce::BuildNeutralPlan(model, shapes);
  if (!plan.ok()) return false;
  uint64_t bytes = 0, work = 0;
  for (const PlannedValue& v : (*plan)->values)
    bytes = SatAdd(bytes, v.byte_size);
  for (const PlanNode& node : (*plan)->nodes)
    work = SatAdd(work, NodeWork(node, (*plan)->values));
  return bytes <= kMaxPlanBytes && work <= kMaxWork;
}

// Whether an executor may run one batch of `plan`: its inputs within
// kMaxInputBytes, and arena, inputs and outputs (BYTES serialized, each
// string at most `max_string_bytes`) within kMaxPlanBytes.
bool RunFits(const coalesce::ExecutionPlan& plan, uint64_t max_string_bytes) {
  const uint64_t per_string = 4 + max_string_bytes;
  uint64_t inputs = 0, total = plan.arena_bytes();
  for (int i = 0; i < plan.num_inputs(); ++i) {
    inputs = SatAdd(inputs, plan.input_dtype(i) == DataType::kBytes
                                ? SatMul(Elements(plan.input_shape(i)),
                                         4 + kMaxMadeStringBytes)
                                : plan.input_byte_size(i));
  }
  for (int o = 0; o < plan.num_outputs(); ++o) {
    total =
        SatAdd(total, plan.output_dtype(o) == DataType::kBytes
                          ? SatMul(Elements(plan.output_shape(o)), per_string)
                          : plan.output_byte_size(o));
  }
  return inputs <= kMaxInputBytes && SatAdd(total, inputs) <= kMaxPlanBytes;
}

// The fuzz bytes, read round and round: where input values come from.
class ByteCycle {
 public:
  // REQUIRES: size > 0.
  ByteCycle(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Next() {
    const uint8_t b = data_[at_];
    at_ = (at_ + 1) % size_;
    return b;
  }

 private:
  const uint8_t* const data_;
  const size_t size_;
  size_t at_ = 0;
};

// ±(1/16 .. 63/16): never 0, exact in FP16 and BF16.
float NonZeroFloat(uint8_t b) { return (static_cast<int>(b % 64) - 31.5f) / 8; }
// -8 .. -1 and 1 .. 8.
int NonZeroInt(uint8_t b) {
  const int v = b % 16 - 8;
  return v >= 0 ? v + 1 : v;
}

// One element of `dtype` made from one fuzz byte, as the bits the engine
// stores: the low ElementByteSize(dtype) bytes (little-endian hosts only).
uint64_t ElementBits(DataType dtype, uint8_t b) {
  namespace k = coalesce::kernels;
  const float f = NonZeroFloat(b);
  switch (dtype) {
    case DataType::kBool:
      return b & 1;
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32:
    case DataType::kUint64:
      return b % 8 + 1;
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:  // two's complement: the low bytes keep the value
      return static_cast<uint64_t>(static_cast<int64_t>(NonZeroInt(b)));
    case DataType::kFp16:
      return k::FloatToHalfBits(f);
    case DataType::kBf16:
      return k::FloatToBf16Bits(f);
    case DataType::kFp32:
      return std::bit_cast<uint32_t>(f);
    case DataType::kFp64:
      return std::bit_cast<uint64_t>(static_cast<double>(f));
    default:
      return 0;
  }
}

void FillNumeric(DataType dtype, int64_t count, char* out, ByteCycle& bytes) {
  static_assert(std::endian::native == std::endian::little);
  const size_t width = coalesce::ElementByteSize(dtype);
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t bits = ElementBits(dtype, bytes.Next());
    std::memcpy(out + i * width, &bits, width);
  }
}

// A BYTES input in serialized form: per element a 4-byte little-endian
// length, then a number's text ("-0.9375") or, one time in eight, 1 to 4
// raw fuzz bytes.
std::string SerializedStrings(int64_t count, ByteCycle& bytes) {
  std::string out;
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t b = bytes.Next();
    std::string element = absl::StrCat(NonZeroFloat(b));
    if (b % 8 == 0) {
      element.clear();
      for (int c = 0; c <= b / 8 % 4; ++c) element.push_back(bytes.Next());
    }
    for (int shift = 0; shift < 32; shift += 8)
      out.push_back(static_cast<char>(element.size() >> shift & 0xff));
    out += element;
  }
  return out;
}

absl::Status FillInputs(const Model& model, const std::vector<Shape>& shapes,
                        ByteCycle& bytes, coalesce::BatchSlot& slot) {
  for (size_t i = 0; i < shapes.size(); ++i) {
    const DataType dtype = model.signature().inputs[i].dtype;
    const int64_t count = static_cast<int64_t>(Elements(shapes[i]));
    if (dtype != DataType::kBytes) {
      FillNumeric(dtype, count, slot.input_data(static_cast<int>(i)), bytes);
      continue;
    }
    const std::string serialized = SerializedStrings(count, bytes);
    if (absl::Status s =
            slot.SetInputByteSize(static_cast<int>(i), serialized.size());
        !s.ok())
      return s;
    std::memcpy(slot.input_data(static_cast<int>(i)), serialized.data(),
                serialized.size());
  }
  return absl::OkStatus();
}

// One batch of `shapes` through the executor protocol; every output byte is
// read, so that a size past its buffer shows.
void RunOneBatch(const std::shared_ptr<const Model>& model,
                 const std::vector<Shape>& shapes, ByteCycle bytes) {
  absl::StatusOr<std::unique_ptr<coalesce::ExecutorInstance>> executor =
      coalesce::CreateCpuExecutor(model,
                                  {.intra_op_threads = 1, .num_slots = 1});
  if (!executor.ok()) return;
  coalesce::BatchSlot* slot = (*executor)->slot(0);
  if (!slot->SetInputShapes(shapes).ok()) return;
  if (!FillInputs(*model, shapes, bytes, *slot).ok()) return;
  (*executor)->CopyIn(slot);
  (*executor)->Run(slot);
  if (!(*executor)->CopyOut(slot)->Wait().ok()) return;
  unsigned sum = 0;
  for (size_t o = 0; o < model->signature().outputs.size(); ++o) {
    const char* data = slot->output_data(static_cast<int>(o));
    const size_t size = slot->output_byte_size(static_cast<int>(o));
    for (size_t b = 0; b < size; ++b) sum += data[b];
  }
  volatile unsigned sink = sum;
  (void)sink;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  // Constant folding at load and while planning runs kernels on this thread.
  coalesce::kernels::SetIntraOpThreads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::shared_ptr<const Model>> model =
      Model::LoadFromBytes(bytes);
  if (!model.ok()) return 0;
  coalesce::PlanCache plans(*model);
  std::shared_ptr<const coalesce::ExecutionPlan> first;
  for (int64_t batch : {1, 2}) {
    const std::vector<Shape> shapes = InputShapes(**model, batch);
    if (!PlanFits(*model, shapes)) continue;
    absl::StatusOr<std::shared_ptr<const coalesce::ExecutionPlan>> plan =
        plans.Get(shapes);
    if (plan.ok() && batch == 1) first = *std::move(plan);
  }
  // No string in the file is longer than the file.
  const uint64_t max_string_bytes =
      std::max<uint64_t>(size, kMaxMadeStringBytes);
  if (first == nullptr || !RunFits(*first, max_string_bytes)) return 0;
  RunOneBatch(*model, InputShapes(**model, 1), ByteCycle(data, size));
  return 0;
}
