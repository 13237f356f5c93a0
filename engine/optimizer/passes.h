// The optimizer's passes (see graph_optimizer.h for what each does). Each
// rewrites the graph behind `editor` and leaves it committed and refreshed.
#ifndef COALESCE_ENGINE_OPTIMIZER_PASSES_H_
#define COALESCE_ENGINE_OPTIMIZER_PASSES_H_

#include <cstdint>

#include "absl/status/status.h"
#include "engine/optimizer/graph_editor.h"

namespace coalesce {

absl::Status ComputeHalfInFloat(GraphEditor& editor);
absl::Status FoldConstants(int64_t opset, GraphEditor& editor);
void FoldConvChannelAffine(GraphEditor& editor);
void LowerPatchConvolutions(GraphEditor& editor);
void FuseMatMulBias(GraphEditor& editor);
void FuseConvResidual(GraphEditor& editor);
void FuseActivations(int64_t opset, GraphEditor& editor);
void FuseSharedInputProjections(int64_t opset, GraphEditor& editor);
void FuseLayerNorm(GraphEditor& editor);
void FuseGelu(GraphEditor& editor);
void UseChannelsLast(GraphEditor& editor);
void MergeCommonSubexpressions(GraphEditor& editor);
void RemoveDeadNodes(GraphEditor& editor);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_OPTIMIZER_PASSES_H_
