#include "kernels/cpu/threading.h"

#include <omp.h>

#include <algorithm>

namespace coalesce::kernels {

void SetIntraOpThreads(int threads) {
  omp_set_dynamic(0);
  omp_set_num_threads(std::max(threads, 1));
}

int IntraOpThreads() { return omp_get_max_threads(); }

}  // namespace coalesce::kernels
