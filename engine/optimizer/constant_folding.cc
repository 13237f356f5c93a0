// Constant folding: Constant nodes become initializers, then every node whose
// inputs are all initializers is run once with the engine's own kernel and
// its outputs become initializers, until nothing changes. Outputs above
// kMaxNodeFoldBytes, or above kMaxFoldBytesUnchecked and much larger than
// their inputs, stay computed at run time, so an absurd ConstantOfShape
// cannot exhaust memory at load. Nodes with a STRING output are not folded
// (the strings they make would need an owner); STRING Constants become
// string_data initializers.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "engine/aligned_buffer.h"
#include "engine/onnx_import.h"
#include "engine/op_registry.h"
#include "engine/optimizer/passes.h"
#include "engine/prepared_kernel.h"
#include "engine/string_ref.h"

namespace coalesce {
namespace {

// The most one folded node may produce. (The planner's kMaxFoldedBytes is
// another bound: on the shape arithmetic it computes while planning.)
constexpr size_t kMaxNodeFoldBytes = size_t{1} << 30;
// Outputs above this are folded only when they are no more than
// kMaxFoldGrowth times the node's constant inputs: ConstantOfShape, Expand
// or Tile of a few bytes into gigabytes stay for run time, where the plan's
// size checks bound them, instead of taking the memory at load.
constexpr size_t kMaxFoldBytesUnchecked = size_t{16} << 20;
constexpr size_t kMaxFoldGrowth = 4;

// `data` holds the tensor as the engine does: elements, or StringRef
// handles for STRING, whose bytes go to string_data.
onnx::TensorProto ToTensorProto(const std::string& name, const TensorInfo& info,
                                const char* data, size_t bytes) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(OnnxTypeOf(info.dtype));
  for (int64_t d : info.shape) t.add_dims(d);
  if (info.dtype == DataType::kBytes) {
    const StringRef* strings = reinterpret_cast<const StringRef*>(data);
    for (size_t i = 0; i < bytes / sizeof(StringRef); ++i) {
      const std::string_view s = strings[i].view();
      t.add_string_data(s.data(), s.size());
    }
  } else {
    t.set_raw_data(data, bytes);
  }
  return t;
}

// Replaces Constant nodes by initializers of the same name.
absl::Status ConstantNodesToInitializers(GraphEditor& editor) {
  for (onnx::NodeProto& node : *editor.graph().mutable_node()) {
    if (node.op_type() != "Constant" || !IsDefaultDomain(node)) continue;
    absl::StatusOr<std::unique_ptr<ConstantTensor>> c =
        ImportConstantNode(node);
    if (!c.ok()) return c.status();
    editor.AddInitializer(ToTensorProto(node.output(0),
                                        {(*c)->dtype, (*c)->shape, nullptr},
                                        (*c)->bytes(), (*c)->byte_size));
    editor.Remove(&node);
  }
  editor.Commit();
  return absl::OkStatus();
}

class Folder {
 public:
  Folder(int64_t opset, GraphEditor& editor) : opset_(opset), editor_(editor) {}

  // Folds `node` when it can; true if it did.
  bool TryFold(onnx::NodeProto& node) {
    const OpFactory* factory =
        OpRegistry::Builtin().Find(node.domain(), node.op_type());
    if (factory == nullptr || node.input_size() == 0) return false;
    std::vector<TensorInfo> infos;
    for (const std::string& in : node.input()) {
      if (in.empty()) {
        infos.emplace_back();
        continue;
      }
      const ConstantTensor* c = Constant(in);
      if (c == nullptr) return false;
      infos.push_back({c->dtype, c->shape, c->bytes()});
    }
    absl::StatusOr<OpNode> op_node = OpNode::Resolve(node, opset_);
    if (!op_node.ok()) return false;
    absl::StatusOr<std::unique_ptr<OpKernel>> kernel = (*factory)(*op_node);
    if (!kernel.ok()) return false;
    std::vector<TensorInfo> outs(node.output_size());
    if (!(*kernel)->Infer(infos, absl::MakeSpan(outs)).ok()) return false;
    return Evaluate(node, **kernel, infos, outs);
  }

 private:
  const ConstantTensor* Constant(const std::string& name) {
    auto it = cache_.find(name);
    if (it != cache_.end()) return it->second.get();
    const onnx::TensorProto* t = editor_.Initializer(name);
    if (t == nullptr) return nullptr;
    absl::StatusOr<std::unique_ptr<ConstantTensor>> c = editor_.ReadTensor(*t);
    if (!c.ok()) return nullptr;
    return (cache_[name] = *std::move(c)).get();
  }

  static size_t ConstantInputBytes(const std::vector<TensorInfo>& infos) {
    size_t total = 0;
    for (const TensorInfo& i : infos) {
      std::optional<int64_t> count = ElementCount(i.shape);
      if (i.constant_data != nullptr && count)
        total += static_cast<size_t>(*count) * StorageByteSize(i.dtype);
    }
    return total;
  }

  bool Evaluate(onnx::NodeProto& node, const OpKernel& kernel,
                const std::vector<TensorInfo>& infos,
                const std::vector<TensorInfo>& outs) {
    std::vector<AlignedBuffer> buffers(outs.size());
    std::vector<size_t> bytes(outs.size(), 0);
    size_t total = 0;
    std::vector<ConstTensorView> in;
    for (const TensorInfo& i : infos)
      in.push_back({i.dtype, &i.shape, i.constant_data});
    for (size_t o = 0; o < outs.size(); ++o) {
      std::optional<int64_t> count = ElementCount(outs[o].shape);
      // STRING outputs stay computed at run time: nothing here would own
      // the strings they make.
      if (outs[o].dtype == DataType::kBytes) return false;
      const size_t elem = ElementByteSize(outs[o].dtype);
      if (!outs[o].present() || !count || elem == 0 ||
          static_cast<uint64_t>(*count) > kMaxNodeFoldBytes / elem)
        return false;
      bytes[o] = *count * elem;
      total += bytes[o];
      if (total > kMaxNodeFoldBytes) return false;
    }
    if (total > kMaxFoldBytesUnchecked &&
        total > kMaxFoldGrowth * ConstantInputBytes(infos))
      return false;
    std::vector<TensorView> out;
    for (size_t o = 0; o < outs.size(); ++o) {
      if (!buffers[o].Reserve(std::max<size_t>(bytes[o], 1)).ok()) return false;
      out.push_back({outs[o].dtype, &outs[o].shape, buffers[o].data()});
    }
    if (!Run(kernel, infos, outs, in, out).ok()) return false;
    for (size_t o = 0; o < outs.size(); ++o) {
      editor_.AddInitializer(
          ToTensorProto(node.output(o), outs[o], buffers[o].data(), bytes[o]));
    }
    editor_.Remove(&node);
    return true;
  }

  static absl::Status Run(const OpKernel& kernel,
                          const std::vector<TensorInfo>& infos,
                          const std::vector<TensorInfo>& outs,
                          const std::vector<ConstTensorView>& in,
                          const std::vector<TensorView>& out) {
    absl::StatusOr<std::unique_ptr<PreparedKernel>> prepared =
        kernel.Prepare(infos, outs);
    if (!prepared.ok()) return prepared.status();
    if (*prepared == nullptr) return kernel.Run(in, out);
    AlignedBuffer scratch;
    if (absl::Status s =
            scratch.Reserve(std::max<size_t>((*prepared)->scratch_bytes(), 1));
        !s.ok())
      return s;
    return (*prepared)->Run(in, out, scratch.data());
  }

  const int64_t opset_;
  GraphEditor& editor_;
  absl::flat_hash_map<std::string, std::unique_ptr<ConstantTensor>> cache_;
};

}  // namespace

absl::Status FoldConstants(int64_t opset, GraphEditor& editor) {
  if (absl::Status s = ConstantNodesToInitializers(editor); !s.ok()) return s;
  Folder folder(opset, editor);
  // Each round folds at least one node, so this ends.
  for (bool changed = true; changed;) {
    changed = false;
    for (onnx::NodeProto& node : *editor.graph().mutable_node())
      changed |= folder.TryFold(node);
    editor.Commit();
  }
  return absl::OkStatus();
}

}  // namespace coalesce
