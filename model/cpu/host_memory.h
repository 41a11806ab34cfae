// Host memory of the CPU backend (tensors and workspaces). 64-byte aligned (a cache line and an
// AVX-512 vector, which oneDNN's kernels prefer); blocks from 2 MiB up are 2 MiB aligned and
// advised as transparent huge pages (madvise MADV_HUGEPAGE), which kernels with THP in "madvise"
// mode (Debian's default) give only to advised memory. MNN at batch 32 holds about 3 GB of such
// blocks: with 4 KiB pages the first step spends seconds in page faults (the first write of
// each activation buffer; measured on this project's 2-vCPU machine, docs/benchmarks.md) and
// every step pays TLB misses on them. DOWNSCALE_HUGEPAGES=0 leaves the advice out (to compare).
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

#include "model/env_switch.h"

namespace ds::model {

constexpr size_t kHugePage = size_t(2) << 20;

// Read once; the CPU backend reads it when it is made, so a mistyped value stops the run there
// (env_switch.h), not at a first large allocation.
inline bool huge_pages_wanted() {
  static const bool wanted = on_off_switch(
      "DOWNSCALE_HUGEPAGES", true, "0 (no transparent huge pages advised for large host buffers) or 1 or unset (advised)");
  return wanted;
}

// At least `bytes` (0 counts as 1), or nullptr when out of memory; free with host_free.
inline void* host_allocate(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes < kHugePage || !huge_pages_wanted()) return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  const size_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, size);
  // Advice only: a kernel without THP says EINVAL and the block stays in small pages.
  if (p) madvise(p, size, MADV_HUGEPAGE);
  return p;
}

inline void host_free(void* p) { std::free(p); }

}  // namespace ds::model
