// ExecutionPlan: a Model's NeutralPlan (engine/neutral_plan.h: every tensor's
// type and shape, where it lives, the nodes computed while planning) bound to
// the CPU: intermediate tensors get offsets in a scratch arena whose blocks
// are reused once a tensor is dead, and kernels that prepare per-shape work
// (PreparedKernel: oneDNN primitives, packed weights) are prepared once here.
// Built once per distinct input-shape set (see PlanCache) and immutable
// except for the PreparedKernels' reusable objects, so a plan runs one
// Execute at a time: each executor instance owns its plans (PlanCache) and
// runs them on its one worker thread.
//
// STRING (kBytes) values hold StringRef handles (engine/string_ref.h). For a
// STRING model input or output the plan reserves a block of the arena for
// its handles (string_input_offset, string_output_offset): the caller parses
// the serialized input there and passes that address as the input, and
// reads the output's handles from there after Execute (engine/string_io.h).
#ifndef COALESCE_ENGINE_EXECUTION_PLAN_H_
#define COALESCE_ENGINE_EXECUTION_PLAN_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/aligned_buffer.h"
#include "engine/attention_pattern.h"
#include "engine/cpu_attention.h"
#include "engine/model.h"
#include "engine/neutral_plan.h"
#include "engine/node_profile.h"
#include "engine/op_kernel.h"
#include "engine/packed_rows.h"
#include "engine/prepared_kernel.h"
#include "engine/shape.h"

namespace coalesce {

class StringStore;

// What one Execute may use besides its inputs, outputs and arena.
struct ExecuteContext {
  // When set (sized for the model's graph nodes), each node's time is added.
  NodeProfile* profile = nullptr;
  // Where ops put the bytes of strings they make (Cast to STRING); the
  // caller keeps them until it has read the outputs. Without one, such an op
  // fails the run.
  StringStore* strings = nullptr;
};

struct PlanOptions {
  // Exported attentions run as one kernel each (engine/cpu_attention.h);
  // off: node by node, as the model spells them.
  bool fuse_attention = true;
  // The OpenMP threads the executor runs the plan on (its instance's
  // intra-op threads), which the fused attention's scratch is sized for;
  // 0: the building thread's limit. Plans are built on batch-forming and
  // warm-up threads, whose limit is not the worker's.
  int intra_op_threads = 0;
};

class ExecutionPlan {
 public:
  // Infers every shape for `input_shapes` (model input order, batch dim
  // included) and lays out the arena. InvalidArgument naming the input or node
  // when the shapes do not fit the model.
  static absl::StatusOr<std::shared_ptr<const ExecutionPlan>> Build(
      std::shared_ptr<const Model> model,
      const std::vector<Shape>& input_shapes, const PlanOptions& options = {});

  // How many attentions run as one kernel (PlanOptions::fuse_attention),
  // and how many of those read and write packed rows (a token-packed plan:
  // engine/packed_rows.h).
  int fused_attentions() const { return static_cast<int>(attention_.size()); }
  int packed_row_attentions() const;

  int num_inputs() const { return static_cast<int>(input_values_.size()); }
  int num_outputs() const { return static_cast<int>(output_values_.size()); }
  // Bytes of input i in engine memory (for STRING: its handles).
  size_t input_byte_size(int i) const {
    return values()[input_values_[i]].byte_size;
  }
  DataType input_dtype(int i) const {
    return values()[input_values_[i]].info.dtype;
  }
  const Shape& input_shape(int i) const {
    return values()[input_values_[i]].info.shape;
  }
  DataType output_dtype(int i) const {
    return values()[output_values_[i]].info.dtype;
  }
  const std::string& input_name(int i) const {
    return (*neutral_->value_names)[input_values_[i]];
  }
  const std::string& output_name(int i) const {
    return (*neutral_->value_names)[output_values_[i]];
  }
  // For a STRING input or output: the arena offset (64-byte aligned) of its
  // handle block, input_byte_size(i) or output_byte_size(i) bytes, reserved
  // for the whole Execute. Meaningless for other types.
  size_t string_input_offset(int i) const { return string_input_offsets_[i]; }
  size_t string_output_offset(int i) const { return string_output_offsets_[i]; }
  const Shape& output_shape(int i) const {
    return values()[output_values_[i]].info.shape;
  }
  size_t output_byte_size(int i) const {
    return values()[output_values_[i]].byte_size;
  }
  // Scratch bytes Execute needs: intermediate tensors, kernels' scratch and
  // a table of tensor addresses.
  size_t arena_bytes() const { return arena_bytes_; }
  const std::vector<PlannedValue>& values() const { return neutral_->values; }
  const NeutralPlan& neutral() const { return *neutral_; }

  // Runs every node in order. REQUIRES: inputs[i] holds input_byte_size(i)
  // bytes, outputs[i] has room for output_byte_size(i), arena for arena_bytes()
  // (64-byte aligned); STRING inputs and outputs are handle arrays (the
  // caller may place them at string_input_offset / string_output_offset).
  // Returns the first failing kernel's status. REQUIRES: no other Execute of
  // this plan is running.
  // Allocates nothing (engine/allocation_test.cc), except that an op making
  // strings (Cast to STRING) adds their bytes to context.strings, which may
  // allocate, and that kernels keep per-call dim lists inline only up to
  // rank 8.
  absl::Status Execute(absl::Span<const char* const> inputs,
                       absl::Span<char* const> outputs, char* arena,
                       const ExecuteContext& context = {}) const;

 private:
  ExecutionPlan(std::shared_ptr<const Model> model,
                std::shared_ptr<const NeutralPlan> neutral);

  absl::Status PrepareNodes();
  void FuseAttention(int threads);
  void PlanArena();
  // The values node n reads and writes as the plan runs it: its own, those
  // of the fused attention it runs, none when a fused attention took it.
  std::vector<int> NodeReads(size_t n) const;
  std::vector<int> NodeWrites(size_t n) const;
  absl::Status RunNode(size_t n, char** data, char* arena,
                       const ExecuteContext& context) const;
  absl::Status RunAttention(int k, char** data, char* scratch) const;
  void RunRowView(const GraphNode& node, char** data) const;
  size_t ScratchBytes(size_t n) const;   // node n's (or its attention's)
  size_t PackedIndexBytes(int k) const;  // attention k's offsets, positions
  // The input value node `n` writes its output 0 over, or -1: see
  // PreparedKernel::in_place_input; a row view's or a reshaping kernel's
  // (OpKernel::CopiesInputBytes) input where it dies.
  // `last_use`: by value, the last node reading it.
  int InPlaceInput(int n, const std::vector<int>& last_use) const;

  std::shared_ptr<const Model> model_;
  std::shared_ptr<const NeutralPlan> neutral_;
  const std::vector<int>& input_values_;
  const std::vector<int>& output_values_;
  // By value id: offsets of intermediate values in the arena.
  std::vector<size_t> arena_offsets_;
  // By node index; null where the kernel's plain Run is used.
  std::vector<std::unique_ptr<PreparedKernel>> prepared_;
  std::vector<size_t> scratch_offsets_;  // by node index, into the arena
  // By model input / output index: arena offsets of STRING handle blocks.
  std::vector<size_t> string_input_offsets_, string_output_offsets_;
  size_t arena_bytes_ = 0;
  // Fused attentions; by node index: -1 runs its kernel, kInsideAttention
  // is one a fused attention replaces, k >= 0 runs attention_[k] (its last),
  // kRowView is a Transpose of a site's row_views: its output is its
  // input's bytes, in the order the site and the dense layer beside it
  // agree on (AttentionSite::row_views).
  static constexpr int kInsideAttention = -2, kRowView = -3;
  std::vector<AttentionSite> attention_;
  std::vector<PackedRowsSite> packed_rows_;  // by site; pack_index -1: none
  std::vector<int> node_attention_;
  int attention_threads_ = 1;  // the threads its scratch is sized for
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_EXECUTION_PLAN_H_
