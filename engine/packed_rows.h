// PackedRowsSite: a fused attention (engine/attention_pattern.h) of a
// token-packed plan (engine/token_packing.h) that reads and writes packed
// rows. Its Q, K and V are views of one value only it reads,
// Reshape(Gather(rows_in, spread_index)) ([B, S, W] from [T', W]), and its
// output only goes on packed, Gather(Reshape(out), pack_index) into
// rows_out [T', E]. An attention kernel then reads rows_in and writes
// rows_out directly, per sequence and over its real rows only (the pack
// index gives them: engine/packing_indices.h, PackedRealRows), and `nodes`
// (the two Gathers and two Reshapes) do not run: no padded query rows, no
// copies. The CPU plan (engine/execution_plan.h) and the device's
// (engine/device/plan_lowering.h) both take such sites. Pure functions of
// the plan.
#ifndef COALESCE_ENGINE_PACKED_ROWS_H_
#define COALESCE_ENGINE_PACKED_ROWS_H_

#include <cstdint>
#include <vector>

#include "engine/attention_pattern.h"
#include "engine/neutral_plan.h"

namespace coalesce {

struct PackedRowsSite {
  int pack_index = -1;  // the value of the plan's kPackIndexInput
  int rows_in = -1, rows_out = -1;
  int64_t rows = 0;  // T': the pack index's entries, rows_in's and rows_out's
  std::vector<int> nodes;
};

// The packed-rows form of `site` of `plan`, or pack_index -1 when the site
// does not read and write packed rows as above (a padded plan, a site whose
// Q, K, V or output has other readers, or whose views are not whole rows
// of those values: each row W apart, every head inside its row).
PackedRowsSite PackedRowsOf(const NeutralPlan& plan, const AttentionSite& site);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_PACKED_ROWS_H_
