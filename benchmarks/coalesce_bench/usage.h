// The text of coalesce-bench's --help around its generated flag list
// (options.cc declares the flags). Pure functions.
#ifndef COALESCE_BENCHMARKS_COALESCE_BENCH_USAGE_H_
#define COALESCE_BENCHMARKS_COALESCE_BENCH_USAGE_H_

#include <string>

namespace coalesce::bench {

// What the tool is, its usage line, its modes and how it measures.
std::string BenchUsageIntro();

// Exit codes and examples.
std::string BenchUsageFooter();

}  // namespace coalesce::bench

#endif  // COALESCE_BENCHMARKS_COALESCE_BENCH_USAGE_H_
