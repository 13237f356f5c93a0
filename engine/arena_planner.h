// ArenaPlanner: assigns offsets in one arena to tensors with known lifetimes so
// that tensors whose lifetimes do not overlap share memory. Offline: it only
// computes offsets; the arena is allocated by whoever runs the plan.
// Not thread-safe.
#ifndef COALESCE_ENGINE_ARENA_PLANNER_H_
#define COALESCE_ENGINE_ARENA_PLANNER_H_

#include <cstddef>
#include <map>

namespace coalesce {

class ArenaPlanner {
 public:
  static constexpr size_t kAlignment = 64;

  // Offset (a multiple of kAlignment) of a new block of `bytes` bytes that
  // overlaps no live block. Best fit among freed gaps, else the arena grows.
  size_t Allocate(size_t bytes);

  // Returns a block given by Allocate(bytes) to the free space.
  // REQUIRES: (offset, bytes) is live.
  void Free(size_t offset, size_t bytes);

  // Arena size needed for every allocation so far.
  size_t peak_bytes() const { return end_; }

 private:
  static size_t Round(size_t bytes);

  std::map<size_t, size_t> free_;  // offset -> size, coalesced
  size_t end_ = 0;
};

}  // namespace coalesce

#endif  // COALESCE_ENGINE_ARENA_PLANNER_H_
