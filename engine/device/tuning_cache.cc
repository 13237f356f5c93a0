#include "engine/device/tuning_cache.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace coalesce {
namespace {

constexpr absl::string_view kHeader = "coalesce-tuning-cache 2";

bool Savable(absl::string_view text) {
  return text.find_first_of("\t\r\n") == absl::string_view::npos;
}

bool ValidTime(double microseconds) {
  return std::isfinite(microseconds) && microseconds >= 0;
}

// What a file holds, read in full before anything is merged.
using ParsedEntries = std::vector<std::pair<std::string, TuningChoice>>;

absl::Status LineError(const std::string& path, int line,
                       absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ":", line, ": not a tuning cache: ", why));
}

// `<key>\t<choice>\t<microseconds>`.
absl::Status ParseEntry(absl::string_view text, const std::string& path,
                        int line, ParsedEntries* parsed) {
  std::vector<absl::string_view> fields = absl::StrSplit(text, '\t');
  if (fields.size() != 3) {
    return LineError(path, line, "expected key, choice and microseconds");
  }
  double microseconds = 0;
  if (!absl::SimpleAtod(fields[2], &microseconds) || !ValidTime(microseconds)) {
    return LineError(path, line,
                     absl::StrCat("bad microseconds '", fields[2], "'"));
  }
  if (fields[0].empty()) return LineError(path, line, "empty key");
  parsed->emplace_back(std::string(fields[0]),
                       TuningChoice{std::string(fields[1]), microseconds});
  return absl::OkStatus();
}

absl::Status Parse(absl::string_view contents, const std::string& path,
                   ParsedEntries* parsed) {
  int line = 0;
  for (absl::string_view text : absl::StrSplit(contents, '\n')) {
    ++line;
    if (line == 1) {
      if (text != kHeader) {
        return LineError(path, line, absl::StrCat("expected '", kHeader, "'"));
      }
    } else if (!text.empty()) {  // blank lines (the last one) are skipped
      if (absl::Status s = ParseEntry(text, path, line, parsed); !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status FileError(absl::string_view what, const std::string& path) {
  const int error = errno;
  return absl::ErrnoToStatus(error, absl::StrCat(what, " ", path));
}

absl::Status ReadFile(const std::string& path, std::string* contents) {
  std::FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return FileError("cannot open", path);
  char buffer[1 << 14];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
    contents->append(buffer, n);
  }
  absl::Status s =
      std::ferror(file) ? FileError("cannot read", path) : absl::OkStatus();
  std::fclose(file);
  return s;
}

// Writes `contents` to `path` and flushes it to the disk; removes the file
// on a failure.
absl::Status WriteFile(const std::string& path, const std::string& contents) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) return FileError("cannot create", path);
  bool ok =
      std::fwrite(contents.data(), 1, contents.size(), file) == contents.size();
  ok = ok && std::fflush(file) == 0 && ::fsync(::fileno(file)) == 0;
  absl::Status s = ok ? absl::OkStatus() : FileError("cannot write", path);
  if (std::fclose(file) != 0 && s.ok()) s = FileError("cannot write", path);
  if (!s.ok()) std::remove(path.c_str());
  return s;
}

}  // namespace

std::optional<TuningChoice> TuningCache::Find(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void TuningCache::Insert(const std::string& key, TuningChoice choice) {
  if (key.empty() || !Savable(key) || !Savable(choice.choice) ||
      !ValidTime(choice.microseconds)) {
    return;
  }
  absl::MutexLock lock(&mu_);
  TuningChoice& entry = entries_[key];
  if (entry.choice == choice.choice &&
      entry.microseconds == choice.microseconds) {
    return;
  }
  entry = std::move(choice);
  changed_ = true;
  ++inserts_;
}

size_t TuningCache::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

bool TuningCache::changed() const {
  absl::MutexLock lock(&mu_);
  return changed_;
}

absl::Status TuningCache::Load(const std::string& path) {
  std::string contents;
  if (absl::Status s = ReadFile(path, &contents); !s.ok()) return s;
  ParsedEntries parsed;
  if (absl::Status s = Parse(contents, path, &parsed); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  for (auto& [key, choice] : parsed) {
    // An entry measured by this process is newer than the file's.
    entries_.emplace(std::move(key), std::move(choice));
  }
  return absl::OkStatus();
}

absl::Status TuningCache::Save(const std::string& path) {
  std::string contents;
  uint64_t inserts = 0;
  {
    absl::MutexLock lock(&mu_);
    absl::StrAppend(&contents, kHeader, "\n");
    for (const auto& [key, choice] : entries_) {
      absl::StrAppend(&contents, key, "\t", choice.choice, "\t",
                      choice.microseconds, "\n");
    }
    inserts = inserts_;
  }
  const std::string temporary = absl::StrCat(path, ".tmp.", ::getpid());
  if (absl::Status s = WriteFile(temporary, contents); !s.ok()) return s;
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    absl::Status s =
        FileError(absl::StrCat("cannot rename to ", path, ":"), temporary);
    std::remove(temporary.c_str());
    return s;
  }
  absl::MutexLock lock(&mu_);
  if (inserts_ == inserts) changed_ = false;  // no Insert while writing
  return absl::OkStatus();
}

}  // namespace coalesce
