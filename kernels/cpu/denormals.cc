#include "kernels/cpu/denormals.h"

#include <omp.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#define COALESCE_HAVE_MXCSR 1
#endif

namespace coalesce::kernels {
namespace {

#ifdef COALESCE_HAVE_MXCSR
// MXCSR bit 15 is flush-to-zero (denormal results become 0), bit 6 is
// denormals-are-zero (denormal operands are read as 0).
constexpr unsigned kFlushBits = 0x8040;

void SetOnThisThread(bool on) {
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(on ? (csr | kFlushBits) : (csr & ~kFlushBits));
}
#endif

}  // namespace

bool FlushDenormalsSupported() {
#ifdef COALESCE_HAVE_MXCSR
  return true;
#else
  return false;
#endif
}

void SetFlushDenormals(bool on) {
#ifdef COALESCE_HAVE_MXCSR
  SetOnThisThread(on);
  // One region at the calling thread's team size reaches every thread its
  // later regions reuse.
#pragma omp parallel
  { SetOnThisThread(on); }
#else
  (void)on;
#endif
}

bool FlushDenormalsEnabled() {
#ifdef COALESCE_HAVE_MXCSR
  return (_mm_getcsr() & kFlushBits) == kFlushBits;
#else
  return false;
#endif
}

}  // namespace coalesce::kernels
