// Compatibility shim: lets the PyPI build of Triton's perf_analyzer (wheel tag
// manylinux_2_38: built with GCC 13 against glibc 2.38) run on Debian 12
// (glibc 2.36, libstdc++ of GCC 12 = GLIBCXX_3.4.30). The binary needs exactly
// seven newer symbols; this library provides them and is LD_PRELOADed by the
// wrapper that setup.sh writes. setup.sh also marks the binary's GLIBC_2.38 /
// GLIBCXX_3.4.31 / GLIBCXX_3.4.32 version requirements weak
// (weaken_versions.py), so the loader accepts the older libraries (it prints a
// warning per version).
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ios>

extern "C" {
long __isoc23_strtol(const char* s, char** e, int b) { return strtol(s, e, b); }
unsigned long __isoc23_strtoul(const char* s, char** e, int b) {
  return strtoul(s, e, b);
}
long long __isoc23_strtoll(const char* s, char** e, int b) {
  return strtoll(s, e, b);
}
unsigned long long __isoc23_strtoull(const char* s, char** e, int b) {
  return strtoull(s, e, b);
}
int __isoc23_sscanf(const char* s, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vsscanf(s, fmt, ap);
  va_end(ap);
  return r;
}
}

// GCC 13 moved the iostream initialisation into libstdc++ and has every TU that
// includes <iostream> reference std::ios_base_library_init(); with the older
// library the init object has to live somewhere: here.
static std::ios_base::Init compat_ios_init;
extern "C" void compat_ios_base_library_init() __asm__(
    "_ZSt21ios_base_library_initv");
extern "C" void compat_ios_base_library_init() {}

// std::__cxx11::basic_string<char>::_M_replace_cold(char* p, size_t len1,
//     const char* s, size_t len2, size_t how_much): the overlapping-source path
//     of
// _M_replace (GCC 13). 'this' is unused.
extern "C" void
compat_replace_cold(void*, char* p, size_t len1, const char* s, size_t len2, size_t how_much) __asm__(
    "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE15_M_replace_"
    "coldEPcmPKcmm");
extern "C" void compat_replace_cold(void*, char* p, size_t len1, const char* s,
                                    size_t len2, size_t how_much) {
  if (len2 && len2 <= len1) memmove(p, s, len2);
  if (how_much && len1 != len2) memmove(p + len2, p + len1, how_much);
  if (len2 > len1) {
    if (s + len2 <= p + len1) {
      memmove(p, s, len2);
    } else if (s >= p + len1) {
      const size_t poff = (s - p) + (len2 - len1);
      memmove(p, p + poff, len2);
    } else {
      const size_t nleft = (p + len1) - s;
      memmove(p, s, nleft);
      memmove(p + nleft, p + len2, len2 - nleft);
    }
  }
}
