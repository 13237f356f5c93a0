// Model: a parsed and validated ONNX model, ready to be planned and run.
//
// A Model is immutable after loading and thread-safe; it is shared (through
// std::shared_ptr) by every executor instance serving it, and its initializers
// are stored once here for all of them.
#ifndef COALESCE_ENGINE_MODEL_H_
#define COALESCE_ENGINE_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "engine/optimizer/graph_optimizer.h"
#include "engine/tensor_spec.h"
#include "engine/token_packing.h"

namespace coalesce {

class ExternalData;

struct ModelOptions {
  // Load-time graph rewrites (engine/optimizer/graph_optimizer.h); all on by
  // default. OptimizerOptions::None() runs the graph as written, except
  // that FLOAT16/BFLOAT16 is always computed in FLOAT (graph_optimizer.h).
  OptimizerOptions optimizer;

  // For a model a device program (engine/device/graph_program.h) runs: the
  // default rewrites, with the layout pass only when `channels_last`, and
  // patch convolutions as GEMMs (graph_optimizer.h, pass 2b). With
  // it, 2-D convolutions, pooling and BatchNormalization run NHWC and the
  // transposes between layouts stay only at the graph's edges and around
  // NCHW-only operators (channels_last.cc); the device lowers either
  // layout. Servers choose NHWC with FP16 (tensor-core convolutions read
  // NHWC natively; docs/device-pipeline.md, "Layout").
  //
  // Also build the model's token-packed form (engine/token_packing.h):
  // its token-wise layers then run on a batch's real tokens only, and the
  // outputs' positions the padding mask pads come out as zeros (except in
  // a GPU batch whose mask is read from shared device memory, which runs
  // with every row taken as real). A model that does not qualify, or
  // whose packed form fails the load-time check against it
  // (CheckPackedAgreesWithPadded), loads as if it were off, with the
  // reason in Model::packing_refusal().
  bool token_packing = false;

  static ModelOptions ForDevice(bool channels_last = false) {
    ModelOptions options;
    options.optimizer.channels_last = channels_last;
    options.optimizer.patch_convolutions = true;
    return options;
  }
};

class Model {
 public:
  // Parses and validates an ONNX ModelProto. InvalidArgument with the reason
  // for an unparsable or truncated file, a graph cycle, a node input nothing
  // defines, an unsupported data type, or unsupported operators (every one
  // named as "node '<name>' (op '<OpType>')"). NotFound if the file, or an
  // external data file it names, is missing. External data
  // (engine/external_data.h) is read from the file's folder and mapped, not
  // copied; the Model keeps the mappings.
  static absl::StatusOr<std::shared_ptr<const Model>> LoadFromFile(
      const std::string& path, const ModelOptions& options = {});
  // As LoadFromFile, for a model in memory: external data is refused
  // (there is no folder to read it from).
  static absl::StatusOr<std::shared_ptr<const Model>> LoadFromBytes(
      std::string_view bytes, const ModelOptions& options = {});

  // Graph inputs that are not initializers, and graph outputs; symbolic or
  // unknown dims are -1.
  const ModelSignature& signature() const { return signature_; }
  // The default-domain opset the model imports.
  int64_t opset_version() const { return opset_version_; }

  // For executors: the validated graph.
  const Graph& graph() const { return graph_; }

  // With ModelOptions::token_packing, when the model qualifies: the same
  // model in packed form, its inputs this model's then kPackIndexInput,
  // kUnpackIndexInput and kSpreadIndexInput (token_packing.h), its
  // constants shared with this
  // one; else null. packing() says which input is the padding mask.
  const std::shared_ptr<const Model>& packed() const { return packed_; }
  const TokenPacking& packing() const { return packing_; }
  // Why a model loaded with ModelOptions::token_packing has no packed form
  // ("" otherwise).
  const std::string& packing_refusal() const { return packing_refusal_; }
  // False when graph input `index` declares no shape at all (any rank fits).
  bool input_has_shape(int index) const { return input_has_shape_[index]; }

 private:
  Model() = default;
  static absl::StatusOr<std::shared_ptr<const Model>> Load(
      std::string_view bytes, const ModelOptions& options,
      const ExternalData* external);
  // The model of an optimized `graph`: its Graph and signature.
  static absl::StatusOr<std::shared_ptr<Model>> FromOptimized(
      const onnx::GraphProto& graph, int64_t opset,
      const ExternalData* external);
  // Sets model's packed_ (or packing_refusal_) from `graph`, which it was
  // built from (rewritten in place).
  static void AddPackedForm(const std::shared_ptr<Model>& model,
                            onnx::GraphProto* graph,
                            const ExternalData* external);

  ModelSignature signature_;
  int64_t opset_version_ = 0;
  Graph graph_;
  std::vector<bool> input_has_shape_;
  std::shared_ptr<const Model> packed_;
  TokenPacking packing_;
  std::string packing_refusal_;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_MODEL_H_
