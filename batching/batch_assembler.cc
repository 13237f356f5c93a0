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

absl::Status BatchAssembler::Gather(std::vector<QueuedRequest>* requests,
                                    BatchSlot* slot) const {
  const size_t num_inputs = requests->front().layout.input_order.size();
  for (size_t i = 0; i < num_inputs; ++i) {
    if (absl::Status s = GatherInput(*requests, i, slot); !s.ok()) return s;
  }
  RouteDeviceOutputs(requests, slot);
  return absl::OkStatus();
}

absl::Status BatchAssembler::GatherInput(
    const std::vector<QueuedRequest>& requests, size_t i,
    BatchSlot* slot) const {
  const int index = static_cast<int>(i);
  char* dst = slot->input_data(index);
  const size_t capacity = slot->input_byte_size(index);
  size_t offset = 0;
  for (const QueuedRequest& q : requests) {
    const RequestInput& input = q.request->inputs[q.layout.input_order[i]];
    const size_t bytes = input.byte_size();
    if (offset + bytes > capacity) break;
    absl::Status s;
    if (input.device && slot->Addresses(*input.device.memory)) {
      s = slot->SetInputFromDevice(index, offset, input.device);
    } else if (input.device) {
      s = input.device.Read(dst + offset);
    } else if (bytes > 0) {
      std::memcpy(dst + offset, input.data.data(), bytes);
    }
    if (!s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("input '", input.name,
                                       "' in device memory: ", s.message()));
    }
    offset += bytes;
  }
  if (offset != capacity) {
    return absl::InternalError(absl::StrCat(
        "input '", InputName(requests.front(), i), "': slot holds ", capacity,
        " bytes, the batch has another size"));
  }
  return absl::OkStatus();
}

void BatchAssembler::RouteDeviceOutputs(std::vector<QueuedRequest>* requests,
                                        BatchSlot* slot) const {
  int64_t batch_rows = 0;
  for (const QueuedRequest& q : *requests) batch_rows += q.layout.batch_size;
  int64_t row = 0;
  for (QueuedRequest& q : *requests) {
    const int64_t rows = batched_ ? q.layout.batch_size : 1;
    const auto& wanted = q.request->device_outputs;
    q.outputs_on_device.clear();  // no allocation on the common path
    if (wanted.empty()) {
      row += q.layout.batch_size;
      continue;
    }
    q.outputs_on_device.assign(q.layout.output_order.size(), false);
    for (size_t k = 0; k < q.layout.output_order.size(); ++k) {
      const int o = q.layout.output_order[k];
      auto ref = wanted.find(outputs_[o].name);
      if (ref == wanted.end() || outputs_[o].dtype == DataType::kBytes ||
          !slot->Addresses(*ref->second.memory)) {
        continue;
      }
      // Refused (rows too large for the span, say): the host path answers,
      // with its error.
      q.outputs_on_device[k] =
          slot->SetOutputToDevice(o, batched_ ? row : 0, rows,
                                  batched_ ? batch_rows : 1, ref->second)
              .ok();
    }
    row += q.layout.batch_size;
  }
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
  for (size_t k = 0; k < request.layout.output_order.size(); ++k) {
    const int o = request.layout.output_order[k];
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
    if (k < request.outputs_on_device.size() && request.outputs_on_device[k]) {
      request.request->sink->AddDeviceOutput(outputs_[o].name,
                                             outputs_[o].dtype, shape, bytes);
      continue;
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
