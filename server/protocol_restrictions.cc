#include "server/protocol_restrictions.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace coalesce {
namespace {

constexpr std::array<absl::string_view, kProtocolGroups> kNames = {
    "health",        "metadata",     "inference",
    "shared-memory", "model-config", "model-repository",
    "statistics",    "trace",        "logging"};

std::optional<ProtocolGroup> GroupNamed(absl::string_view name) {
  for (int i = 0; i < kProtocolGroups; ++i) {
    if (kNames[i] == name) return static_cast<ProtocolGroup>(i);
  }
  return std::nullopt;
}

}  // namespace

absl::Status ProtocolRestrictions::Add(absl::string_view flag_value) {
  auto error = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--grpc-restricted-protocol '", flag_value, "': ", what,
        " (expected <protocol>[,<protocol>...]:<header>=<value>)"));
  };
  const size_t colon = flag_value.find(':');
  if (colon == absl::string_view::npos) return error("no ':'");
  const absl::string_view groups = flag_value.substr(0, colon);
  const absl::string_view header_value = flag_value.substr(colon + 1);
  const size_t equals = header_value.find('=');
  if (equals == absl::string_view::npos || equals == 0) {
    return error("no <header>=<value>");
  }
  Rule rule{absl::AsciiStrToLower(header_value.substr(0, equals)),
            std::string(header_value.substr(equals + 1))};
  std::vector<ProtocolGroup> parsed;
  for (absl::string_view name : absl::StrSplit(groups, ',')) {
    const std::optional<ProtocolGroup> group = GroupNamed(name);
    if (!group) return error(absl::StrCat("unknown protocol '", name, "'"));
    if (rules_[static_cast<int>(*group)]) {
      return error(absl::StrCat("protocol '", name, "' is restricted twice"));
    }
    parsed.push_back(*group);
  }
  for (ProtocolGroup group : parsed) rules_[static_cast<int>(group)] = rule;
  return absl::OkStatus();
}

absl::Status ProtocolRestrictions::Check(
    ProtocolGroup group,
    absl::FunctionRef<std::optional<absl::string_view>(absl::string_view)>
        header) const {
  const std::optional<Rule>& rule = rules_[static_cast<int>(group)];
  if (!rule) return absl::OkStatus();
  const std::optional<absl::string_view> sent = header(rule->header);
  if (sent && *sent == rule->value) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "This protocol is restricted, expecting header '", rule->header, "'"));
}

bool ProtocolRestrictions::empty() const {
  for (const auto& rule : rules_) {
    if (rule) return false;
  }
  return true;
}

}  // namespace coalesce
