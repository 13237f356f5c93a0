// The --profile report of coalesce-onnx-run: a NodeProfile summed by
// operator type and listed by node, as a text table and as JSON.
#ifndef COALESCE_TOOLS_PROFILE_REPORT_H_
#define COALESCE_TOOLS_PROFILE_REPORT_H_

#include <string>

#include "engine/model.h"
#include "engine/node_profile.h"

namespace coalesce::tools {

// Operator types by total time, largest first: per run ms, share of the
// profiled time, and how many nodes of that type ran. `runs` is the number
// of profiled Execute calls (>= 1). REQUIRES: profile.size() equals
// model.graph().nodes.size().
std::string ProfileTable(const Model& model, const NodeProfile& profile,
                         int runs);

// {"runs", "total_ms_per_run", "op_types": [...], "nodes": [...]} with the
// same per-type rows and every node that ran, largest first.
std::string ProfileJson(const Model& model, const NodeProfile& profile,
                        int runs);

}  // namespace coalesce::tools

#endif  // COALESCE_TOOLS_PROFILE_REPORT_H_
