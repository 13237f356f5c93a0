#include "benchmarks/coalesce_bench/metrics_scrape.h"

#include <cmath>
#include <cstdlib>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace coalesce::bench {
namespace {

// Unescapes a label value (\\, \", \n).
std::string Unescape(absl::string_view v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\' && i + 1 < v.size()) {
      ++i;
      out.push_back(v[i] == 'n' ? '\n' : v[i]);
    } else {
      out.push_back(v[i]);
    }
  }
  return out;
}

struct Sample {
  std::map<std::string, std::string> labels;
  double value = 0;
};

// The samples of `family` in the scrape `text`.
std::vector<Sample> Samples(absl::string_view text, absl::string_view family) {
  std::vector<Sample> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, family) || line.size() <= family.size() ||
        line[family.size()] != '{') {
      continue;
    }
    Sample s;
    size_t i = family.size() + 1;
    while (i < line.size() && line[i] != '}') {
      const size_t eq = line.find("=\"", i);
      if (eq == absl::string_view::npos) break;
      size_t end = eq + 2;
      while (end < line.size() && line[end] != '"')
        end += line[end] == '\\' ? 2 : 1;
      if (end >= line.size()) break;
      s.labels[std::string(line.substr(i, eq - i))] =
          Unescape(line.substr(eq + 2, end - eq - 2));
      i = end + 1;
      if (i < line.size() && line[i] == ',') ++i;
    }
    if (i >= line.size() || line[i] != '}') continue;
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(line.substr(i + 1)),
                          &s.value)) {
      continue;
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

std::optional<int> InstanceOf(const Sample& s, const std::string& model) {
  auto m = s.labels.find("model");
  auto i = s.labels.find("model_instance");
  int index = 0;
  if (m == s.labels.end() || m->second != model || i == s.labels.end() ||
      !absl::SimpleAtoi(i->second, &index)) {
    return std::nullopt;
  }
  return index;
}

}  // namespace

std::map<int, StateSeconds> ParseInstanceStates(absl::string_view text,
                                                const std::string& model) {
  std::map<int, StateSeconds> states;
  for (const Sample& s :
       Samples(text, "coalesce_instance_state_seconds_total")) {
    std::optional<int> instance = InstanceOf(s, model);
    if (!instance) continue;
    auto state = s.labels.find("state");
    for (size_t k = 0;
         state != s.labels.end() && k < kInstanceStateNames.size(); ++k) {
      if (state->second == kInstanceStateNames[k]) {
        states[*instance][k] += s.value;
      }
    }
  }
  return states;
}

std::vector<InstanceDiagnosisText> ParseDiagnoses(absl::string_view text,
                                                  const std::string& model) {
  std::vector<InstanceDiagnosisText> found;
  for (const Sample& s : Samples(text, "coalesce_instance_diagnosis_info")) {
    std::optional<int> instance = InstanceOf(s, model);
    if (!instance) continue;
    auto reason = s.labels.find("reason");
    auto detail = s.labels.find("detail");
    found.push_back({*instance, reason == s.labels.end() ? "" : reason->second,
                     detail == s.labels.end() ? "" : detail->second});
  }
  return found;
}

std::vector<std::string> StateSplitLines(
    const std::map<int, StateSeconds>& before,
    const std::map<int, StateSeconds>& after) {
  std::vector<std::string> lines;
  for (const auto& [instance, now] : after) {
    auto was = before.find(instance);
    StateSeconds grown{};
    double total = 0;
    for (size_t k = 0; k < grown.size(); ++k) {
      grown[k] = now[k] - (was == before.end() ? 0.0 : was->second[k]);
      total += grown[k];
    }
    if (total <= 0) continue;
    std::vector<std::string> parts;
    for (size_t k = 0; k < grown.size(); ++k) {
      parts.push_back(absl::StrCat(kInstanceStateNames[k], " ",
                                   std::lround(100 * grown[k] / total), "%"));
    }
    lines.push_back(
        absl::StrCat("instance ", instance, ": ", absl::StrJoin(parts, " | ")));
  }
  return lines;
}

}  // namespace coalesce::bench
