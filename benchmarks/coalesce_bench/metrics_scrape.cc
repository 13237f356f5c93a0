#include "benchmarks/coalesce_bench/metrics_scrape.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

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

struct Target {
  std::string host, port, path;
};

absl::StatusOr<Target> ParseUrl(absl::string_view url) {
  absl::ConsumePrefix(&url, "http://");
  const size_t slash = url.find('/');
  absl::string_view authority = url.substr(0, slash);
  Target t;
  t.path = slash == absl::string_view::npos ? "/metrics"
                                            : std::string(url.substr(slash));
  const size_t colon = authority.rfind(':');
  if (colon == absl::string_view::npos || colon + 1 == authority.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics URL '", url, "' needs HOST:PORT"));
  }
  t.host = std::string(absl::StripPrefix(
      absl::StripSuffix(authority.substr(0, colon), "]"), "["));
  t.port = std::string(authority.substr(colon + 1));
  return t;
}

// One connected TCP socket to host:port, or -1.
int Connect(const Target& t) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(t.host.c_str(), t.port.c_str(), &hints, &found) != 0) {
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

// Reads until the peer closes, the deadline passes or an error occurs.
bool ReadAll(int fd, std::chrono::steady_clock::time_point deadline,
             std::string* out) {
  char buffer[16384];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0) return false;
    if (n == 0) return true;
    out->append(buffer, static_cast<size_t>(n));
  }
}

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

absl::StatusOr<std::string> HttpGet(const std::string& url,
                                    std::chrono::milliseconds timeout) {
  absl::StatusOr<Target> t = ParseUrl(url);
  if (!t.ok()) return t.status();
  const int fd = Connect(*t);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot connect to ", t->host, ":", t->port));
  }
  const std::string request =
      absl::StrCat("GET ", t->path, " HTTP/1.1\r\nHost: ", t->host, ":",
                   t->port, "\r\nConnection: close\r\n\r\n");
  std::string response;
  const bool sent = write(fd, request.data(), request.size()) ==
                    static_cast<ssize_t>(request.size());
  const bool read =
      sent &&
      ReadAll(fd, std::chrono::steady_clock::now() + timeout, &response);
  close(fd);
  if (!read) {
    return absl::UnavailableError(
        absl::StrCat("no complete answer from ", url));
  }
  if (!absl::StartsWith(response, "HTTP/1.1 200") &&
      !absl::StartsWith(response, "HTTP/1.0 200")) {
    return absl::UnavailableError(absl::StrCat(
        url, " answered '", response.substr(0, response.find('\r')), "'"));
  }
  const size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos) {
    return absl::UnavailableError(absl::StrCat("malformed answer from ", url));
  }
  if (absl::StrContains(absl::AsciiStrToLower(response.substr(0, body)),
                        "transfer-encoding: chunked")) {
    return absl::UnavailableError(
        absl::StrCat(url, " answered chunked, which is not read here"));
  }
  return response.substr(body + 4);
}

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
