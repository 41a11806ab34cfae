// A caching allocator's bookkeeping, independent of CUDA: blocks are rounded up to a size class,
// a released block goes onto its class's free list, and the next request of that class takes it
// back without calling the underlying allocator. The CUDA backend puts cudaMalloc/cudaFree under
// it (cudaMalloc is slow and cudaFree synchronizes the device, both per tensor per step without a
// cache); tests/model/caching_allocator_test.cpp drives it with a fake underlying allocator.
//
// Reuse is safe on the GPU because every op runs on the backend's one stream: work queued after a
// release that reuses the block runs after the work queued before it. While the backend runs
// independent layers on several streams (lanes: fork_lanes .. join_lanes), that no longer holds,
// so releases are held back (hold_releases) and become reusable only at the join, after which the
// main stream is ordered after every lane.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/error.h"

namespace ds::model {

class CachingAllocator {
 public:
  // raw_alloc returns nullptr when out of memory (never throws); raw_free returns a block.
  using RawAlloc = std::function<void*(size_t bytes)>;
  using RawFree = std::function<void(void* p)>;

  CachingAllocator(RawAlloc raw_alloc, RawFree raw_free) : alloc_(std::move(raw_alloc)), free_(std::move(raw_free)) {}
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  ~CachingAllocator() { free_all(); }

  // The size actually reserved for a request: at least 512 bytes, then rounded up to a quarter of
  // its power of two (waste at most 25 %), so few classes cover every size and blocks of nearby
  // sizes (the same layer at another batch size) share a class.
  static size_t size_class(size_t bytes) {
    if (bytes <= 512) return 512;
    size_t p = 512;
    while (p * 2 < bytes) p *= 2;  // p < bytes <= 2p
    const size_t step = p / 4;
    return (bytes + step - 1) / step * step;
  }

  void* allocate(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t cls = size_class(bytes);
    auto it = cached_.find(cls);
    if (it != cached_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= cls;
      live_.emplace(p, cls);
      in_use_bytes_ += cls;
      return p;
    }
    void* p = alloc_(cls);
    if (!p) {
      // Out of memory: blocks cached for other classes may be what is missing.
      release_cached_locked();
      p = alloc_(cls);
    }
    if (!p)
      throw Error("out of GPU memory allocating " + std::to_string(bytes) + " bytes (" + std::to_string(in_use_bytes_) +
                  " bytes in use)");
    ++raw_allocations_;
    live_.emplace(p, cls);
    in_use_bytes_ += cls;
    return p;
  }

  void release(void* p) {
    if (!p) return;
    std::lock_guard<std::mutex> lock(mutex_);
    release_locked(p, holding_);
  }

  // A release that bypasses the hold: for a block whose last use the caller has waited for
  // (cudnnFind's scratch after a synchronisation), so a region does not pile such blocks up.
  void release_now(void* p) {
    if (!p) return;
    std::lock_guard<std::mutex> lock(mutex_);
    release_locked(p, false);
  }

  // While on, released blocks are kept aside, not handed out again; off makes them reusable.
  void hold_releases(bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    holding_ = on;
    if (on) return;
    for (auto& [p, cls] : held_) cached_[cls].push_back(p);
    held_.clear();
  }
  size_t held_blocks() const { return held_.size(); }

  // Returns the cached (free) blocks to the underlying allocator.
  void release_cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    release_cached_locked();
  }

  // Returns every block, cached or still in use (at the backend's destruction).
  void free_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    release_cached_locked();
    for (auto& [p, cls] : held_) free_(p);
    held_.clear();
    cached_bytes_ = 0;
    for (auto& [p, cls] : live_) free_(p);
    live_.clear();
    in_use_bytes_ = 0;
  }

  size_t in_use_bytes() const { return in_use_bytes_; }
  size_t cached_bytes() const { return cached_bytes_; }
  size_t raw_allocations() const { return raw_allocations_; }

 private:
  void release_locked(void* p, bool hold) {
    auto it = live_.find(p);
    if (it == live_.end()) throw Error("caching allocator: release of a block it did not allocate");
    if (hold)
      held_.emplace_back(p, it->second);
    else
      cached_[it->second].push_back(p);
    cached_bytes_ += it->second;
    in_use_bytes_ -= it->second;
    live_.erase(it);
  }

  // Held blocks stay: a lane may still be using them.
  void release_cached_locked() {
    for (auto& [cls, blocks] : cached_)
      for (void* p : blocks) {
        free_(p);
        cached_bytes_ -= cls;
      }
    cached_.clear();
  }

  RawAlloc alloc_;
  RawFree free_;
  std::mutex mutex_;
  std::unordered_map<void*, size_t> live_;        // block -> its class size
  std::map<size_t, std::vector<void*>> cached_;   // class size -> free blocks
  std::vector<std::pair<void*, size_t>> held_;    // released while holding_ (block, class size)
  bool holding_ = false;
  size_t in_use_bytes_ = 0, cached_bytes_ = 0, raw_allocations_ = 0;
};

}  // namespace ds::model
