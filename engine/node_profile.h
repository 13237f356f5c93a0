// NodeProfile: where Execute spends its time, node by node.
//
// Indexed like the model's graph nodes (Model::graph().nodes, after graph
// optimization). ExecutionPlan::Execute adds each node's wall time and a run
// count when given a profile; nodes a plan computed while planning are never
// run and stay at zero. Any plan of the model may add to the same profile.
// Not thread-safe: one profile per executor instance (whose Execute calls
// are sequential). Adding allocates nothing.
#ifndef COALESCE_ENGINE_NODE_PROFILE_H_
#define COALESCE_ENGINE_NODE_PROFILE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coalesce {

class NodeProfile {
 public:
  explicit NodeProfile(size_t num_nodes)
      : nanos_(num_nodes, 0),
        runs_(num_nodes, 0),
        fused_attention_(num_nodes, false) {}

  // REQUIRES: node < size().
  void Add(size_t node, int64_t nanos) {
    nanos_[node] += nanos;
    ++runs_[node];
  }
  // Node `node` ran a fused attention that ends there (the plan's nodes it
  // replaced did not run): reports name its time "Attention".
  void MarkFusedAttention(size_t node) { fused_attention_[node] = true; }
  bool fused_attention(size_t node) const { return fused_attention_[node]; }

  size_t size() const { return nanos_.size(); }
  // Whether any node ran since construction or Reset.
  bool ran() const;
  int64_t nanos(size_t node) const { return nanos_[node]; }
  int64_t runs(size_t node) const { return runs_[node]; }

  // Back to zero (e.g. after warm-up runs), marks included.
  void Reset();

 private:
  std::vector<int64_t> nanos_;
  std::vector<int64_t> runs_;
  std::vector<bool> fused_attention_;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_NODE_PROFILE_H_
