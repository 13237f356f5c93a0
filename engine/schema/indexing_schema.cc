#include "engine/schema/indexing_schema.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/schema/infer_util.h"
#include "engine/schema/op_schema.h"
#include "engine/schema/schema_families.h"

namespace coalesce {
namespace {

// ---- TopK -----------------------------------------------------------------

absl::StatusOr<TopKAttrs> ResolveTopK(const SchemaNode& node) {
  TopKAttrs attrs;
  const NodeAttributes& a = node.attributes;
  absl::StatusOr<int64_t> axis = a.GetInt("axis", -1);
  absl::StatusOr<int64_t> largest = a.GetInt("largest", 1);
  absl::StatusOr<int64_t> sorted = a.GetInt("sorted", 1);
  absl::StatusOr<int64_t> k = a.GetInt("k", -1);
  for (const absl::Status& s :
       {axis.status(), largest.status(), sorted.status(), k.status()})
    if (!s.ok()) return s;
  if (node.opset < 10) {
    if (*k < 0) return absl::InvalidArgumentError("attribute 'k' is required");
    attrs.k_attribute = *k;
  }
  attrs.axis = *axis;
  attrs.largest = *largest != 0;
  attrs.sorted = *sorted != 0;
  return attrs;
}

bool IsSortable(DataType t) {
  return t == DataType::kFp32 || t == DataType::kFp64 ||
         t == DataType::kInt32 || t == DataType::kInt64;
}

absl::Status InferTopK(const TopKAttrs& attrs, absl::Span<const TensorInfo> in,
                       absl::Span<TensorInfo> out) {
  if (in.empty() || !in[0].present() || !IsSortable(in[0].dtype)) {
    return absl::InvalidArgumentError(
        "input 0 must be FP32, FP64, INT32 or INT64");
  }
  const Shape& x = in[0].shape;
  absl::StatusOr<int64_t> axis = NormalizeAxis(attrs.axis, x.size());
  if (!axis.ok()) return axis.status();
  int64_t k = attrs.k_attribute;
  if (k < 0) {
    if (in.size() < 2) return absl::InvalidArgumentError("K is required");
    absl::StatusOr<std::vector<int64_t>> values = ReadInts(in[1], nullptr, "K");
    if (!values.ok()) return values.status();
    if (values->size() != 1) {
      return absl::InvalidArgumentError("K must hold one value");
    }
    k = (*values)[0];
  }
  if (k < 0 || k > x[*axis]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "K ", k, " is outside [0, ", x[*axis], "] (axis ", *axis, ")"));
  }
  Shape shape = x;
  shape[*axis] = k;
  out[0] = {in[0].dtype, shape, nullptr};
  if (out.size() > 1) out[1] = {DataType::kInt64, shape, nullptr};
  return absl::OkStatus();
}

// ---- OneHot ---------------------------------------------------------------

absl::StatusOr<OneHotAttrs> ResolveOneHot(const SchemaNode& node) {
  absl::StatusOr<int64_t> axis = node.attributes.GetInt("axis", -1);
  if (!axis.ok()) return axis.status();
  return OneHotAttrs{*axis};
}

absl::Status InferOneHot(const OneHotAttrs& attrs,
                         absl::Span<const TensorInfo> in,
                         absl::Span<TensorInfo> out) {
  if (in.size() < 3 || !in[0].present() || !in[1].present() ||
      !in[2].present()) {
    return absl::InvalidArgumentError("needs indices, depth and values");
  }
  if (in[1].constant_data == nullptr) {
    return absl::InvalidArgumentError(
        "depth must be known when planning (an initializer, a Constant, or "
        "computed from shapes)");
  }
  if (DimProduct(in[1].shape, 0, in[1].shape.size()) != 1 ||
      DimProduct(in[2].shape, 0, in[2].shape.size()) != 2 ||
      in[2].shape.size() != 1) {
    return absl::InvalidArgumentError(
        "depth must hold one value and values two ([off, on])");
  }
  if (in[0].dtype == DataType::kBytes || in[0].dtype == DataType::kBool) {
    return absl::InvalidArgumentError("indices must be numeric");
  }
  absl::StatusOr<int64_t> depth = OneHotDepth(in[1]);
  if (!depth.ok()) return depth.status();
  if (*depth < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("depth must be positive, got ", *depth));
  }
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  absl::StatusOr<int64_t> axis = NormalizeAxis(attrs.axis, rank + 1);
  if (!axis.ok()) return axis.status();
  out[0] = {in[2].dtype, in[0].shape, nullptr};
  out[0].shape.insert(out[0].shape.begin() + *axis, *depth);
  return absl::OkStatus();
}

// ---- GatherElements, GatherND, CumSum -------------------------------------

absl::StatusOr<GatherElementsAttrs> ResolveGatherElements(
    const SchemaNode& node) {
  absl::StatusOr<int64_t> axis = node.attributes.GetInt("axis", 0);
  if (!axis.ok()) return axis.status();
  return GatherElementsAttrs{*axis};
}

absl::Status InferGatherElements(const GatherElementsAttrs& attrs,
                                 absl::Span<const TensorInfo> in,
                                 absl::Span<TensorInfo> out) {
  if (in.size() < 2 || !in[0].present() || !in[1].present())
    return absl::InvalidArgumentError("needs data and indices");
  if (in[1].dtype != DataType::kInt64 && in[1].dtype != DataType::kInt32)
    return absl::InvalidArgumentError("indices must be int64 or int32");
  const Shape& data = in[0].shape;
  const Shape& indices = in[1].shape;
  if (data.empty() || indices.size() != data.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "indices ", ShapeToString(indices), " must have the rank of data ",
        ShapeToString(data), " (at least 1)"));
  }
  absl::StatusOr<int64_t> axis = NormalizeAxis(attrs.axis, data.size());
  if (!axis.ok()) return axis.status();
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) != *axis && indices[d] > data[d]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "indices ", ShapeToString(indices), " are larger than data ",
          ShapeToString(data), " along axis ", d));
    }
  }
  out[0] = {in[0].dtype, indices, nullptr};
  return absl::OkStatus();
}

absl::StatusOr<GatherNdAttrs> ResolveGatherNd(const SchemaNode& node) {
  absl::StatusOr<int64_t> batch_dims = node.attributes.GetInt("batch_dims", 0);
  if (!batch_dims.ok()) return batch_dims.status();
  if (*batch_dims < 0) {
    return absl::InvalidArgumentError("batch_dims must not be negative");
  }
  return GatherNdAttrs{*batch_dims};
}

Shape Dims(const Shape& shape, size_t begin, size_t end) {
  return Shape(shape.begin() + begin, shape.begin() + end);
}

absl::Status InferGatherNd(const GatherNdAttrs& attrs,
                           absl::Span<const TensorInfo> in,
                           absl::Span<TensorInfo> out) {
  if (in.size() < 2 || !in[0].present())
    return absl::InvalidArgumentError("needs data and indices");
  if (!in[1].present() ||
      (in[1].dtype != DataType::kInt64 && in[1].dtype != DataType::kInt32)) {
    return absl::InvalidArgumentError("indices must be int64 or int32");
  }
  const Shape& data = in[0].shape;
  const Shape& indices = in[1].shape;
  if (indices.empty()) {
    return absl::InvalidArgumentError("indices must have rank 1 or more");
  }
  const int64_t b = attrs.batch_dims;
  const int64_t r = data.size(), q = indices.size(), k = indices.back();
  if (b >= std::min(r, q) || k < 1 || k > r - b ||
      Dims(data, 0, b) != Dims(indices, 0, b)) {
    return absl::InvalidArgumentError(
        absl::StrCat("indices ", ShapeToString(indices), " do not fit data ",
                     ShapeToString(data), " with batch_dims ", b));
  }
  Shape shape = Dims(indices, 0, q - 1);
  shape.insert(shape.end(), data.begin() + b + k, data.end());
  out[0] = {in[0].dtype, std::move(shape), nullptr};
  return absl::OkStatus();
}

absl::StatusOr<CumSumAttrs> ResolveCumSum(const SchemaNode& node) {
  absl::StatusOr<int64_t> exclusive = node.attributes.GetInt("exclusive", 0);
  if (!exclusive.ok()) return exclusive.status();
  absl::StatusOr<int64_t> reverse = node.attributes.GetInt("reverse", 0);
  if (!reverse.ok()) return reverse.status();
  return CumSumAttrs{*exclusive != 0, *reverse != 0};
}

bool IsCumSumType(DataType t) {
  return t == DataType::kFp32 || t == DataType::kFp64 ||
         t == DataType::kInt32 || t == DataType::kInt64 ||
         t == DataType::kUint32 || t == DataType::kUint64;
}

absl::Status InferCumSum(const CumSumAttrs&, absl::Span<const TensorInfo> in,
                         absl::Span<TensorInfo> out) {
  if (in.size() < 2 || !in[0].present() || !in[1].present())
    return absl::InvalidArgumentError("needs an input and an axis");
  if (!IsCumSumType(in[0].dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input 0 has type ", std::string(DataTypeName(in[0].dtype)),
        " (FP32, FP64, INT32, INT64, UINT32 and UINT64 are supported)"));
  }
  if (in[1].dtype != DataType::kInt64 && in[1].dtype != DataType::kInt32)
    return absl::InvalidArgumentError("axis must be int64 or int32");
  if (DimProduct(in[1].shape, 0, in[1].shape.size()) != 1)
    return absl::InvalidArgumentError("axis must hold one value");
  if (in[1].constant_data != nullptr) {
    if (absl::Status s =
            CumSumAxis(in[1], in[1].constant_data, in[0].shape).status();
        !s.ok())
      return s;
  }
  out[0] = {in[0].dtype, in[0].shape, nullptr};
  return absl::OkStatus();
}

}  // namespace

bool ElementIsNonZero(DataType type, const char* data, int64_t i) {
  auto read = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, data + i * sizeof(v), sizeof(v));
    return v;
  };
  switch (type) {
    case DataType::kFp32:
      return read(float{}) != 0.0f;
    case DataType::kFp64:
      return read(double{}) != 0.0;
    case DataType::kFp16:
    case DataType::kBf16:  // all but the sign bit zero: +-0
      return (read(uint16_t{}) & 0x7fff) != 0;
    default:
      break;
  }
  const size_t bytes = ElementByteSize(type);
  for (size_t b = 0; b < bytes; ++b)
    if (data[i * bytes + b] != 0) return true;
  return false;
}

absl::StatusOr<int64_t> CumSumAxis(const TensorInfo& axis, const void* data,
                                   const Shape& shape) {
  const int64_t value = axis.dtype == DataType::kInt64
                            ? static_cast<const int64_t*>(data)[0]
                            : static_cast<const int32_t*>(data)[0];
  // A scalar input has one position along its (absent) axis 0.
  return NormalizeAxis(value, std::max<size_t>(shape.size(), 1));
}

namespace {

// ---- NonZero
// -----------------------------------------------------------------

absl::Status InferNonZero(const NonZeroAttrs&, absl::Span<const TensorInfo> in,
                          absl::Span<TensorInfo> out) {
  if (in.empty() || !in[0].present())
    return absl::InvalidArgumentError("input 0 is required");
  const DataType t = in[0].dtype;
  if (t == DataType::kBytes || t == DataType::kInvalid) {
    return absl::InvalidArgumentError(absl::StrCat("input 0 has type ",
                                                   std::string(DataTypeName(t)),
                                                   "; numbers expected"));
  }
  if (in[0].constant_data == nullptr) {
    return absl::UnimplementedError(
        "NonZero of data known only at run time (its output shape depends on "
        "the values); its input must be computed from constants or shapes");
  }
  const int64_t n = DimProduct(in[0].shape, 0, in[0].shape.size());
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    count += ElementIsNonZero(t, in[0].constant_data, i) ? 1 : 0;
  const int64_t rank = std::max<int64_t>(in[0].shape.size(), 1);
  out[0] = {DataType::kInt64, {rank, count}, nullptr};
  return absl::OkStatus();
}

// ---- ScatterElements ------------------------------------------------------

absl::StatusOr<ScatterElementsAttrs> ResolveScatterElements(
    const SchemaNode& node) {
  absl::StatusOr<int64_t> axis = node.attributes.GetInt("axis", 0);
  absl::StatusOr<std::string> reduction =
      node.attributes.GetString("reduction", "none");
  if (!axis.ok()) return axis.status();
  if (!reduction.ok()) return reduction.status();
  static const auto* kReductions = new std::map<std::string, ScatterReduction>{
      {"none", ScatterReduction::kNone},
      {"add", ScatterReduction::kAdd},
      {"mul", ScatterReduction::kMul},
      {"max", ScatterReduction::kMax},
      {"min", ScatterReduction::kMin}};
  auto it = kReductions->find(*reduction);
  if (it == kReductions->end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown reduction '", *reduction, "'"));
  }
  return ScatterElementsAttrs{*axis, it->second};
}

absl::Status InferScatterElements(const ScatterElementsAttrs& attrs,
                                  absl::Span<const TensorInfo> in,
                                  absl::Span<TensorInfo> out) {
  if (in.size() < 3 || !in[0].present() || !in[1].present())
    return absl::InvalidArgumentError("needs data, indices and updates");
  if (in[1].dtype != DataType::kInt64 && in[1].dtype != DataType::kInt32)
    return absl::InvalidArgumentError("indices must be int64 or int32");
  if (absl::Status s = ExpectInputType(in, 2, in[0].dtype); !s.ok()) return s;
  const Shape& data = in[0].shape;
  if (in[1].shape != in[2].shape || in[1].shape.size() != data.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("indices ", ShapeToString(in[1].shape), " and updates ",
                     ShapeToString(in[2].shape),
                     " must have one shape, of data's rank ", data.size()));
  }
  absl::StatusOr<int64_t> axis = NormalizeAxis(attrs.axis, data.size());
  if (!axis.ok()) return axis.status();
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) != *axis && in[1].shape[d] > data[d]) {
      return absl::InvalidArgumentError(
          absl::StrCat("indices ", ShapeToString(in[1].shape),
                       " are larger than data ", ShapeToString(data)));
    }
  }
  const bool arithmetic =
      in[0].dtype == DataType::kFp32 || in[0].dtype == DataType::kFp64 ||
      in[0].dtype == DataType::kInt32 || in[0].dtype == DataType::kInt64;
  if (attrs.reduction != ScatterReduction::kNone && !arithmetic) {
    return absl::InvalidArgumentError(
        "a reduction needs FP32, FP64, INT32 or INT64 data");
  }
  out[0] = {in[0].dtype, data, nullptr};
  return absl::OkStatus();
}

// ---- Einsum -----------------------------------------------------------------

bool IsLetter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// One term's letters with its ellipsis expanded into `ellipsis` letters
// (placeholders '0'.., right-aligned among `total` ellipsis dimensions).
absl::StatusOr<std::string> ExpandTerm(const std::string& term,
                                       int64_t ellipsis, int64_t total) {
  std::string letters;
  bool seen = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      if (seen) return absl::InvalidArgumentError("two ellipses in a term");
      seen = true;
      for (int64_t j = total - ellipsis; j < total; ++j)
        letters.push_back(static_cast<char>('0' + j));
      i += 2;
    } else if (IsLetter(term[i])) {
      letters.push_back(term[i]);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected '", std::string(1, term[i]), "'"));
    }
  }
  return letters;
}

int64_t LetterCount(const std::string& term) {
  return std::count_if(term.begin(), term.end(), IsLetter);
}

absl::StatusOr<EinsumAttrs> ResolveEinsum(const SchemaNode& node) {
  absl::StatusOr<std::string> equation =
      node.attributes.GetString("equation", "");
  if (!equation.ok()) return equation.status();
  std::string compact;
  for (char c : *equation)
    if (c != ' ') compact.push_back(c);
  if (compact.empty()) {
    return absl::InvalidArgumentError("attribute 'equation' is required");
  }
  return EinsumAttrs{compact};
}

absl::Status InferEinsum(const EinsumAttrs& attrs,
                         absl::Span<const TensorInfo> in,
                         absl::Span<TensorInfo> out) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < in.size(); ++i) {
    if (absl::Status s = ExpectInputType(in, i, DataType::kFp32); !s.ok())
      return s;
    shapes.push_back(in[i].shape);
  }
  absl::StatusOr<EinsumPlan> plan = PlanEinsum(attrs.equation, shapes);
  if (!plan.ok()) return plan.status();
  out[0] = {DataType::kFp32, plan->output_shape, nullptr};
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> OneHotDepth(const TensorInfo& depth) {
  const char* data = depth.constant_data;
  if (data == nullptr) {
    return absl::InvalidArgumentError("depth must be known when planning");
  }
  switch (depth.dtype) {
    case DataType::kInt64:
      return *reinterpret_cast<const int64_t*>(data);
    case DataType::kInt32:
      return *reinterpret_cast<const int32_t*>(data);
    case DataType::kFp32:
    case DataType::kFp64: {
      const double v = depth.dtype == DataType::kFp32
                           ? *reinterpret_cast<const float*>(data)
                           : *reinterpret_cast<const double*>(data);
      if (!(v >= 1 && v < 0x1p40)) {  // NaN fails too
        return absl::InvalidArgumentError(
            absl::StrCat("depth ", v, " is not a positive count"));
      }
      return static_cast<int64_t>(v);
    }
    default:
      return absl::InvalidArgumentError(
          "depth must be INT64, INT32, FP32 or FP64");
  }
}

absl::StatusOr<EinsumPlan> PlanEinsum(const std::string& equation,
                                      const std::vector<Shape>& operands) {
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("equation '", equation, "' has ", terms.size(),
                     " operands, the node ", operands.size()));
  }
  std::vector<int64_t> ellipsis(terms.size());
  int64_t total = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const bool has = terms[i].find("...") != std::string::npos;
    ellipsis[i] =
        static_cast<int64_t>(operands[i].size()) - LetterCount(terms[i]);
    if (ellipsis[i] < 0 || (!has && ellipsis[i] != 0) || ellipsis[i] > 10) {
      return absl::InvalidArgumentError(
          absl::StrCat("operand ", i, " ", ShapeToString(operands[i]),
                       " does not fit '", terms[i], "'"));
    }
    total = std::max(total, ellipsis[i]);
  }
  EinsumPlan plan;
  plan.size.assign(256, 0);
  std::map<char, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    absl::StatusOr<std::string> letters =
        ExpandTerm(terms[i], ellipsis[i], total);
    if (!letters.ok()) return letters.status();
    for (size_t d = 0; d < letters->size(); ++d) {
      const char c = (*letters)[d];
      const int64_t dim = operands[i][d];
      int64_t& size = plan.size[static_cast<unsigned char>(c)];
      const bool broadcast = c >= '0' && c <= '9';
      if (size != 0 && size != dim && !(broadcast && (size == 1 || dim == 1))) {
        return absl::InvalidArgumentError(absl::StrCat(
            "dimension '", std::string(1, c), "' is ", size, " and ", dim));
      }
      size = std::max(size, dim);
      ++count[c];
    }
    plan.inputs.push_back(*std::move(letters));
  }
  if (arrow != std::string::npos) {
    absl::StatusOr<std::string> output =
        ExpandTerm(equation.substr(arrow + 2), total, total);
    if (!output.ok()) return output.status();
    plan.output = *std::move(output);
  } else {  // implicit: the ellipsis, then letters used once, sorted
    for (int64_t j = 0; j < total; ++j)
      plan.output.push_back(static_cast<char>('0' + j));
    for (const auto& [c, n] : count)
      if (n == 1 && IsLetter(c)) plan.output.push_back(c);
  }
  std::set<char> seen;
  for (char c : plan.output) {
    if (!count.count(c) || !seen.insert(c).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output letter '", std::string(1, c), "' is unknown or repeated"));
    }
    plan.output_shape.push_back(plan.size[static_cast<unsigned char>(c)]);
  }
  return plan;
}

void RegisterIndexingSchemas(SchemaRegistry& registry) {
  registry.Register("TopK", std::make_shared<FunctionSchema<TopKAttrs>>(
                                &ResolveTopK, &InferTopK));
  registry.Register("OneHot", std::make_shared<FunctionSchema<OneHotAttrs>>(
                                  &ResolveOneHot, &InferOneHot));
  registry.Register("ScatterElements",
                    std::make_shared<FunctionSchema<ScatterElementsAttrs>>(
                        &ResolveScatterElements, &InferScatterElements));
  registry.Register("Einsum", std::make_shared<FunctionSchema<EinsumAttrs>>(
                                  &ResolveEinsum, &InferEinsum));
  registry.Register("GatherElements",
                    std::make_shared<FunctionSchema<GatherElementsAttrs>>(
                        &ResolveGatherElements, &InferGatherElements));
  registry.Register("GatherND", std::make_shared<FunctionSchema<GatherNdAttrs>>(
                                    &ResolveGatherNd, &InferGatherNd));
  registry.Register("NonZero",
                    std::make_shared<FunctionSchema<NonZeroAttrs>>(
                        [](const SchemaNode&) {
                          return absl::StatusOr<NonZeroAttrs>(NonZeroAttrs{});
                        },
                        &InferNonZero));
  registry.Register("CumSum", std::make_shared<FunctionSchema<CumSumAttrs>>(
                                  &ResolveCumSum, &InferCumSum));
}

}  // namespace coalesce
