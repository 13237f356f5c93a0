#include "server/reshape_instance.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace coalesce {
namespace {

int64_t FixedProduct(const Shape& shape) {
  int64_t product = 1;
  for (int64_t d : shape) {
    if (d >= 0) product *= d;
  }
  return product;
}

int Wildcards(const Shape& shape) {
  return static_cast<int>(std::count(shape.begin(), shape.end(), -1));
}

// The model's input shapes for the config's `shapes`.
std::vector<Shape> ModelShapes(const ReshapePlan& plan,
                               const std::vector<Shape>& shapes) {
  std::vector<Shape> mapped = shapes;
  for (size_t i = 0; i < mapped.size() && i < plan.inputs.size(); ++i) {
    if (plan.inputs[i]) {
      mapped[i] = MapShape(shapes[i], plan.inputs[i]->reshape, plan.batching);
    }
  }
  return mapped;
}

// A slot whose shapes are those of the config; its inner slot's are the
// model's.
class ReshapeSlot : public BatchSlot {
 public:
  ReshapeSlot(BatchSlot* inner, const ReshapePlan* plan)
      : inner_(inner), plan_(plan) {}

  BatchSlot* inner() const { return inner_; }

  absl::Status SetInputShapes(const std::vector<Shape>& shapes) override {
    return inner_->SetInputShapes(ModelShapes(*plan_, shapes));
  }
  bool ReadyFor(const std::vector<Shape>& shapes) const override {
    return inner_->ReadyFor(ModelShapes(*plan_, shapes));
  }
  absl::Status SetInputByteSize(int index, size_t byte_size) override {
    return inner_->SetInputByteSize(index, byte_size);
  }
  char* input_data(int index) override { return inner_->input_data(index); }
  size_t input_byte_size(int index) const override {
    return inner_->input_byte_size(index);
  }
  const Shape& output_shape(int index) const override {
    const Shape& model = inner_->output_shape(index);
    if (static_cast<size_t>(index) >= plan_->outputs.size() ||
        !plan_->outputs[index]) {
      return model;
    }
    if (outputs_.size() < plan_->outputs.size()) {
      outputs_.resize(plan_->outputs.size());
    }
    outputs_[index] =
        MapShape(model, plan_->outputs[index]->dims, plan_->batching);
    return outputs_[index];
  }
  const char* output_data(int index) const override {
    return inner_->output_data(index);
  }
  size_t output_byte_size(int index) const override {
    return inner_->output_byte_size(index);
  }
  StepTimings timings() const override { return inner_->timings(); }
  // A reshape keeps every tensor's bytes and the batch rows.
  bool Addresses(const SharedDeviceMemory& memory) const override {
    return inner_->Addresses(memory);
  }
  absl::Status SetInputFromDevice(int index, size_t offset,
                                  const DeviceMemoryRef& ref) override {
    return inner_->SetInputFromDevice(index, offset, ref);
  }
  absl::Status SetOutputToDevice(int index, int64_t first_row, int64_t rows,
                                 int64_t batch_rows,
                                 const DeviceMemoryRef& ref) override {
    return inner_->SetOutputToDevice(index, first_row, rows, batch_rows, ref);
  }

 private:
  BatchSlot* const inner_;
  const ReshapePlan* const plan_;
  // The config-side output shapes; the slot protocol has one owner at a time.
  mutable std::vector<Shape> outputs_;
};

class ReshapeInstance : public ExecutorInstance {
 public:
  ReshapeInstance(std::unique_ptr<ExecutorInstance> inner, ReshapePlan plan)
      : inner_(std::move(inner)), plan_(std::move(plan)) {
    for (int i = 0; i < inner_->num_slots(); ++i) {
      slots_.push_back(std::make_unique<ReshapeSlot>(inner_->slot(i), &plan_));
    }
  }

  int num_slots() const override { return inner_->num_slots(); }
  absl::Status health() const override { return inner_->health(); }
  std::vector<int64_t> PreparedBatchSizes(
      int64_t max_batch_size) const override {
    return inner_->PreparedBatchSizes(max_batch_size);
  }
  // A reshape keeps every input's bytes: the inner instance rewrites them.
  int PreparedVariants(const std::vector<Shape>& shapes) const override {
    return inner_->PreparedVariants(ModelShapes(plan_, shapes));
  }
  absl::Status WritePreparedVariant(
      const std::vector<Shape>& shapes, int variant,
      std::vector<std::string>* data) const override {
    return inner_->WritePreparedVariant(ModelShapes(plan_, shapes), variant,
                                        data);
  }
  BatchSlot* slot(int index) override { return slots_[index].get(); }
  std::shared_ptr<Event> CopyIn(BatchSlot* slot) override {
    return inner_->CopyIn(Inner(slot));
  }
  std::shared_ptr<Event> Run(BatchSlot* slot) override {
    return inner_->Run(Inner(slot));
  }
  std::shared_ptr<Event> CopyOut(BatchSlot* slot) override {
    return inner_->CopyOut(Inner(slot));
  }
  std::shared_ptr<Event> Submit(BatchSlot* slot) override {
    return inner_->Submit(Inner(slot));
  }

 private:
  static BatchSlot* Inner(BatchSlot* slot) {
    return static_cast<ReshapeSlot*>(slot)->inner();
  }

  const std::unique_ptr<ExecutorInstance> inner_;
  const ReshapePlan plan_;
  std::vector<std::unique_ptr<ReshapeSlot>> slots_;
};

}  // namespace

bool ReshapePlan::empty() const {
  auto none = [](const auto& v) {
    return std::none_of(v.begin(), v.end(),
                        [](const auto& r) { return r.has_value(); });
  };
  return none(inputs) && none(outputs);
}

absl::Status ReshapeCompatible(const char* kind, const std::string& tensor,
                               const Shape& dims, const Shape& reshape) {
  const int wild_dims = Wildcards(dims);
  const int wild_reshape = Wildcards(reshape);
  if (wild_dims > 1 || wild_reshape > 1 || wild_dims != wild_reshape ||
      FixedProduct(dims) != FixedProduct(reshape)) {
    return absl::InvalidArgumentError(absl::StrCat(
        kind, " '", tensor, "': reshape [", absl::StrJoin(reshape, ","),
        "] does not hold the elements of dims [", absl::StrJoin(dims, ","),
        "] (equal element counts; at most one -1, on both sides or neither)"));
  }
  return absl::OkStatus();
}

Shape MapShape(const Shape& full, const Shape& to, bool batching) {
  const size_t skip = batching && !full.empty() ? 1 : 0;
  int64_t elements = 1;
  for (size_t i = skip; i < full.size(); ++i) elements *= full[i];
  Shape mapped(full.begin(), full.begin() + skip);
  const int64_t fixed = FixedProduct(to);
  for (int64_t d : to) {
    if (d >= 0) {
      mapped.push_back(d);
    } else if (fixed > 0 && elements % fixed == 0) {
      mapped.push_back(elements / fixed);
    } else {
      return full;
    }
  }
  if (Wildcards(to) == 0 && fixed != elements) return full;
  return mapped;
}

std::unique_ptr<ExecutorInstance> WithReshape(
    std::unique_ptr<ExecutorInstance> inner, ReshapePlan plan) {
  if (plan.empty()) return inner;
  return std::make_unique<ReshapeInstance>(std::move(inner), std::move(plan));
}

}  // namespace coalesce
