// HeapAllocations: how many times the global operator new has been called in
// this process, on any thread. For tests that check a path allocates nothing
// (engine/allocation_test.cc, batching/request_path_allocation_test.cc).
//
// counting_allocator.cc replaces the global allocation and deallocation
// functions, so it is compiled into each such test executable and never into
// a library: every other binary keeps the standard ones.
#ifndef COALESCE_ENGINE_TESTING_COUNTING_ALLOCATOR_H_
#define COALESCE_ENGINE_TESTING_COUNTING_ALLOCATOR_H_

#include <cstdint>

namespace coalesce::testing {

int64_t HeapAllocations();

}  // namespace coalesce::testing

#endif  // COALESCE_ENGINE_TESTING_COUNTING_ALLOCATOR_H_
