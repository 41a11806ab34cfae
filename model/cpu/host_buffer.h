// A grow-only, 64-byte aligned host buffer (huge pages when large: host_memory.h). The CPU backend keeps a few of these as workspaces
// (blocked copies of conv operands, oneDNN's scratchpad): ops run one at a time, so every layer can
// share them, and after the first step of a given batch size they never reallocate.
#pragma once
#include <cstddef>
#include <new>

#include "model/cpu/host_memory.h"

namespace ds::model {

class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { host_free(p_); }

  // At least `bytes` bytes; the old contents are not kept when it grows.
  void* reserve(size_t bytes) {
    if (bytes > size_) {
      host_free(p_);
      p_ = nullptr;  // freed: nothing left to free again if the allocation below throws
      size_ = 0;
      const size_t size = (bytes + 63) / 64 * 64;
      p_ = host_allocate(size);
      if (!p_) throw std::bad_alloc();
      size_ = size;
    }
    return p_;
  }

 private:
  void* p_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ds::model
