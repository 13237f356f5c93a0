#include "benchmarks/coalesce_bench/progress.h"

#include <unistd.h>

#include <cstdio>

namespace coalesce::bench {

ProgressLine ProgressLine::ForStderr() {
  return ProgressLine(isatty(STDERR_FILENO) == 1);
}

void ProgressLine::Show(const std::string& text) {
  if (!enabled_) return;
  // \r: back to the start; \033[K: erase the rest of the old line.
  std::fprintf(stderr, "\r%s\033[K", text.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::Clear() {
  if (!enabled_ || !shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace coalesce::bench
