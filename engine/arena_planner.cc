#include "engine/arena_planner.h"

#include <iterator>

namespace coalesce {

size_t ArenaPlanner::Round(size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

size_t ArenaPlanner::Allocate(size_t bytes) {
  const size_t size = Round(bytes);
  if (size == 0) return 0;
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second >= size &&
        (best == free_.end() || it->second < best->second)) {
      best = it;
    }
  }
  if (best != free_.end()) {
    const size_t offset = best->first, remaining = best->second - size;
    free_.erase(best);
    if (remaining > 0) free_[offset + size] = remaining;
    return offset;
  }
  // Extend the trailing free block if there is one.
  if (!free_.empty()) {
    auto last = std::prev(free_.end());
    if (last->first + last->second == end_) {
      const size_t offset = last->first;
      free_.erase(last);
      end_ = offset + size;
      return offset;
    }
  }
  const size_t offset = end_;
  end_ += size;
  return offset;
}

void ArenaPlanner::Free(size_t offset, size_t bytes) {
  size_t size = Round(bytes);
  if (size == 0) return;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return;
    }
  }
  free_[offset] = size;
}

}  // namespace coalesce
