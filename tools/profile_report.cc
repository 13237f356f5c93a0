#include "tools/profile_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace coalesce::tools {
namespace {

struct Row {
  std::string op_type;
  std::string node;  // empty for a per-type row
  double ms_per_run = 0;
  int64_t nodes = 0;
};

// Node n's operator type in the report: "Attention" where a fused
// attention ended (NodeProfile::fused_attention).
const std::string& OpType(const Model& model, const NodeProfile& profile,
                          size_t n) {
  static const std::string kAttention = "Attention";
  return profile.fused_attention(n) ? kAttention
                                    : model.graph().nodes[n].op_type;
}

double TotalMsPerRun(const NodeProfile& profile, int runs) {
  int64_t nanos = 0;
  for (size_t n = 0; n < profile.size(); ++n) nanos += profile.nanos(n);
  return nanos / 1e6 / runs;
}

std::vector<Row> ByOpType(const Model& model, const NodeProfile& profile,
                          int runs) {
  std::map<std::string, Row> rows;
  const auto& nodes = model.graph().nodes;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (profile.runs(n) == 0) continue;
    Row& row = rows[OpType(model, profile, n)];
    row.op_type = OpType(model, profile, n);
    row.ms_per_run += profile.nanos(n) / 1e6 / runs;
    ++row.nodes;
  }
  std::vector<Row> out;
  for (auto& [type, row] : rows) out.push_back(row);
  std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) {
    return a.ms_per_run > b.ms_per_run;
  });
  return out;
}

std::vector<Row> ByNode(const Model& model, const NodeProfile& profile,
                        int runs) {
  std::vector<Row> out;
  const auto& nodes = model.graph().nodes;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (profile.runs(n) == 0) continue;
    out.push_back({OpType(model, profile, n), nodes[n].name,
                   profile.nanos(n) / 1e6 / runs, 1});
  }
  std::stable_sort(out.begin(), out.end(), [](const Row& a, const Row& b) {
    return a.ms_per_run > b.ms_per_run;
  });
  return out;
}

double Share(double part, double total) {
  return total > 0 ? 100.0 * part / total : 0.0;
}

}  // namespace

std::string ProfileTable(const Model& model, const NodeProfile& profile,
                         int runs) {
  const double total = TotalMsPerRun(profile, runs);
  std::string out = absl::StrFormat(
      "profile: %.3f ms per run in nodes, %d run(s)\n%-24s %12s %7s %6s\n",
      total, runs, "op type", "ms per run", "share", "nodes");
  for (const Row& row : ByOpType(model, profile, runs)) {
    absl::StrAppendFormat(&out, "%-24s %12.3f %6.1f%% %6d\n", row.op_type,
                          row.ms_per_run, Share(row.ms_per_run, total),
                          row.nodes);
  }
  return out;
}

std::string ProfileJson(const Model& model, const NodeProfile& profile,
                        int runs) {
  using Json = nlohmann::ordered_json;
  const double total = TotalMsPerRun(profile, runs);
  auto format = [total](const Row& row) {
    Json item{{"op_type", row.op_type}};
    if (row.node.empty()) {
      item["nodes"] = row.nodes;
    } else {
      item["name"] = row.node;
    }
    item["ms_per_run"] = row.ms_per_run;
    item["share_percent"] = Share(row.ms_per_run, total);
    return item;
  };
  Json types = Json::array(), nodes = Json::array();
  for (const Row& row : ByOpType(model, profile, runs))
    types.push_back(format(row));
  for (const Row& row : ByNode(model, profile, runs))
    nodes.push_back(format(row));
  const Json report{{"runs", runs},
                    {"total_ms_per_run", total},
                    {"op_types", std::move(types)},
                    {"nodes", std::move(nodes)}};
  return report.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace coalesce::tools
