// Einsum on the CPU (engine/schema/indexing_schema.h says what it computes):
// the equation bound to the operands' shapes once per plan (Prepare), then
// one contraction loop per run (kernels/cpu/einsum.h). Correct for every
// equation; a GEMM-shaped equation still runs as a loop nest, not as a
// matrix product.
#include "kernels/cpu/einsum.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/op_registry.h"
#include "engine/ops/register_ops.h"
#include "engine/prepared_kernel.h"
#include "engine/schema/indexing_schema.h"

namespace coalesce {
namespace {

// Strides per letter of a tensor whose dimensions carry `letters` (0 for a
// broadcast dimension of size 1 where the letter is larger).
std::vector<int64_t> LetterStrides(const std::string& letters,
                                   const Shape& shape, const EinsumPlan& plan,
                                   const std::string& order) {
  std::vector<int64_t> strides(order.size(), 0);
  int64_t stride = 1;
  for (size_t d = letters.size(); d-- > 0;) {
    const int64_t size = plan.size[static_cast<unsigned char>(letters[d])];
    if (shape[d] == size || size == 1) {
      strides[order.find(letters[d])] += stride;
    }
    stride *= shape[d];
  }
  return strides;
}

// The contraction of `equation` over operands of `shapes`, output letters
// first, then the summed ones.
absl::StatusOr<kernels::Contraction> Contraction(
    const std::string& equation, const std::vector<Shape>& shapes) {
  absl::StatusOr<EinsumPlan> plan = PlanEinsum(equation, shapes);
  if (!plan.ok()) return plan.status();
  std::string order = plan->output;
  for (const std::string& letters : plan->inputs)
    for (char c : letters)
      if (order.find(c) == std::string::npos) order.push_back(c);
  kernels::Contraction c;
  for (char letter : order)
    c.sizes.push_back(plan->size[static_cast<unsigned char>(letter)]);
  for (size_t k = 0; k < shapes.size(); ++k)
    c.strides.push_back(
        LetterStrides(plan->inputs[k], shapes[k], *plan, order));
  c.out_strides = LetterStrides(plan->output, plan->output_shape, *plan, order);
  c.out_count = DimProduct(plan->output_shape, 0, plan->output_shape.size());
  return c;
}

std::vector<const float*> Operands(absl::Span<const ConstTensorView> in) {
  std::vector<const float*> operands;
  for (const ConstTensorView& t : in) operands.push_back(t.as<float>());
  return operands;
}

// Einsum with its contraction built once per plan.
class PreparedEinsum : public PreparedKernel {
 public:
  explicit PreparedEinsum(kernels::Contraction c) : c_(std::move(c)) {}
  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out, char* scratch) override {
    kernels::Contract(c_, Operands(in), out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  const kernels::Contraction c_;
};

class EinsumOp : public SchemaKernel {
 public:
  EinsumOp(const OpNode& node, const EinsumAttrs& attrs)
      : SchemaKernel(node), attrs_(attrs) {}

  absl::StatusOr<std::unique_ptr<PreparedKernel>> Prepare(
      absl::Span<const TensorInfo> in,
      absl::Span<const TensorInfo> out) const override {
    std::vector<Shape> shapes;
    for (const TensorInfo& t : in) shapes.push_back(t.shape);
    absl::StatusOr<kernels::Contraction> c =
        Contraction(attrs_.equation, shapes);
    if (!c.ok()) return c.status();
    return std::make_unique<PreparedEinsum>(*std::move(c));
  }

  // Unprepared: when the planner computes the node from constants.
  absl::Status Run(absl::Span<const ConstTensorView> in,
                   absl::Span<const TensorView> out) const override {
    std::vector<Shape> shapes;
    for (const ConstTensorView& t : in) shapes.push_back(*t.shape);
    absl::StatusOr<kernels::Contraction> c =
        Contraction(attrs_.equation, shapes);
    if (!c.ok()) return c.status();
    kernels::Contract(*c, Operands(in), out[0].as<float>());
    return absl::OkStatus();
  }

 private:
  const EinsumAttrs attrs_;
};

}  // namespace

void RegisterEinsumOp(OpRegistry& registry) {
  registry.Register("Einsum", SchemaFactoryOf<EinsumOp, EinsumAttrs>());
}

}  // namespace coalesce
