// ProgressLine: a live status line on stderr, rewritten in place, shown
// only when stderr is a terminal (so logs and pipes stay clean).
// Not thread-safe: use it from the thread that runs the sweep.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_PROGRESS_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_PROGRESS_H_

#include <string>

namespace coalesce::bench {

class ProgressLine {
 public:
  // Enabled when stderr is a terminal (isatty).
  static ProgressLine ForStderr();
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}

  // Replaces the line's text. No-op when disabled.
  void Show(const std::string& text);
  // Erases the line (before other output). No-op when disabled or empty.
  void Clear();

 private:
  bool enabled_;
  bool shown_ = false;
};

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_PROGRESS_H_
