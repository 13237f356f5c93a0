#include "batching/batch_assembler.h"

#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/serialized_bytes.h"

namespace coalesce {
namespace {

// Product of shape[begin:].
int64_t DimProduct(const Shape& shape, size_t begin) {
  int64_t product = 1;
  for (size_t i = begin; i < shape.size(); ++i) product *= shape[i];
  return product;
}

const std::string& InputName(const QueuedRequest& q, size_t model_input) {
  return q.request->inputs[q.layout.input_order[model_input]].name;
}

}  // namespace

BatchAssembler::BatchAssembler(bool batched, std::vector<TensorSpec> outputs)
    : batched_(batched), outputs_(std::move(outputs)) {}

std::vector<Shape> BatchAssembler::InputShapes(
    const std::vector<QueuedRequest>& requests) const {
  std::vector<Shape> shapes = requests.front().layout.item_shapes;
  if (!batched_) return shapes;
  int64_t rows = 0;
  for (const QueuedRequest& q : requests) rows += q.layout.batch_size;
  for (Shape& shape : shapes) shape.insert(shape.begin(), rows);
  return shapes;
}

absl::Status BatchAssembler::SizeInputs(
    const std::vector<QueuedRequest>& requests,
    const std::vector<Shape>& shapes, BatchSlot* slot) const {
  if (absl::Status s = slot->SetInputShapes(shapes); !s.ok()) {
    return s;
  }
  const QueuedRequest& first = requests.front();
  for (size_t i = 0; i < first.layout.input_order.size(); ++i) {
    if (first.request->inputs[first.layout.input_order[i]].dtype !=
        DataType::kBytes) {
      continue;
    }
    size_t total = 0;
    for (const QueuedRequest& q : requests) {
      total += q.request->inputs[q.layout.input_order[i]].data.size();
    }
    if (absl::Status s = slot->SetInputByteSize(static_cast<int>(i), total);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status BatchAssembler::Gather(const std::vector<QueuedRequest>& requests,
                                    BatchSlot* slot) const {
  const size_t num_inputs = requests.front().layout.input_order.size();
  for (size_t i = 0; i < num_inputs; ++i) {
    char* dst = slot->input_data(static_cast<int>(i));
    const size_t capacity = slot->input_byte_size(static_cast<int>(i));
    size_t offset = 0;
    for (const QueuedRequest& q : requests) {
      const RequestInput& input = q.request->inputs[q.layout.input_order[i]];
      if (offset + input.data.size() > capacity) break;
      if (!input.data.empty()) {
        std::memcpy(dst + offset, input.data.data(), input.data.size());
      }
      offset += input.data.size();
    }
    if (offset != capacity) {
      return absl::InternalError(absl::StrCat(
          "input '", InputName(requests.front(), i), "': slot holds ", capacity,
          " bytes, the batch has another size"));
    }
  }
  return absl::OkStatus();
}

absl::Status BatchAssembler::CheckOutputs(const BatchSlot& slot,
                                          int64_t batch_size) const {
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const Shape& shape = slot.output_shape(static_cast<int>(o));
    const size_t bytes = slot.output_byte_size(static_cast<int>(o));
    if (outputs_[o].dtype == DataType::kBytes) {
      const std::optional<int64_t> count = ElementCount(shape);
      const std::optional<size_t> used =
          count ? SerializedPrefixSize(
                      {slot.output_data(static_cast<int>(o)), bytes}, *count)
                : std::nullopt;
      if (used != bytes || (batched_ && shape[0] != batch_size)) {
        return absl::InternalError(
            absl::StrCat("output '", outputs_[o].name, "' (BYTES) has shape ",
                         ShapeToString(shape), " and ", bytes,
                         " bytes that do not hold its serialized elements in ",
                         batch_size, " rows"));
      }
      continue;
    }
    if (!batched_) continue;
    if (shape.empty() || shape[0] != batch_size ||
        bytes % static_cast<size_t>(batch_size) != 0) {
      return absl::InternalError(
          absl::StrCat("output '", outputs_[o].name, "' has shape ",
                       ShapeToString(shape), " and ", bytes,
                       " bytes; cannot split it into ", batch_size, " rows"));
    }
  }
  return absl::OkStatus();
}

absl::Status BatchAssembler::Scatter(const BatchSlot& slot, int64_t batch_size,
                                     int64_t row_offset,
                                     const QueuedRequest& request) const {
  for (int o : request.layout.output_order) {
    Shape shape = slot.output_shape(o);
    const char* src = slot.output_data(o);
    size_t bytes = slot.output_byte_size(o);
    if (batched_ && outputs_[o].dtype == DataType::kBytes) {
      const int64_t per_row = DimProduct(shape, 1);
      const std::string_view all(src, bytes);
      const size_t begin = *SerializedPrefixSize(all, per_row * row_offset);
      bytes = *SerializedPrefixSize(all.substr(begin),
                                    per_row * request.layout.batch_size);
      src += begin;
      shape[0] = request.layout.batch_size;
    } else if (batched_) {
      const size_t row_bytes = bytes / static_cast<size_t>(batch_size);
      src += row_bytes * static_cast<size_t>(row_offset);
      bytes = row_bytes * static_cast<size_t>(request.layout.batch_size);
      shape[0] = request.layout.batch_size;
    }
    char* dst = request.request->sink->AddOutput(
        outputs_[o].name, outputs_[o].dtype, shape, bytes);
    if (bytes == 0) continue;
    if (dst == nullptr) {
      return absl::InternalError(absl::StrCat("output '", outputs_[o].name,
                                              "': the response has no room"));
    }
    std::memcpy(dst, src, bytes);
  }
  return absl::OkStatus();
}

}  // namespace coalesce
