// The CUDA backend's caching allocator (model/caching_allocator.h) over a fake underlying
// allocator that counts calls and enforces a capacity, so reuse, size classes, the retry after
// out-of-memory and the final release are checked without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "model/caching_allocator.h"

namespace ds::model {
namespace {

struct FakeDevice {
  size_t capacity = size_t(1) << 30, used = 0;
  int mallocs = 0, frees = 0;
  std::map<void*, size_t> blocks;
  CachingAllocator::RawAlloc alloc() {
    return [this](size_t bytes) -> void* {
      if (used + bytes > capacity) return nullptr;
      void* p = std::malloc(bytes);
      blocks[p] = bytes;
      used += bytes;
      ++mallocs;
      return p;
    };
  }
  CachingAllocator::RawFree free() {
    return [this](void* p) {
      auto it = blocks.find(p);
      ASSERT_NE(it, blocks.end()) << "freed a block twice or one never allocated";
      used -= it->second;
      blocks.erase(it);
      std::free(p);
      ++frees;
    };
  }
};

TEST(CachingAllocator, SizeClassesBoundTheWaste) {
  EXPECT_EQ(CachingAllocator::size_class(1), 512u);
  EXPECT_EQ(CachingAllocator::size_class(512), 512u);
  EXPECT_EQ(CachingAllocator::size_class(513), 640u);  // quarter steps of 128 between 512 and 1024
  for (size_t b : {size_t(700), size_t(4097), size_t(1) << 20, (size_t(3) << 20) + 5, size_t(123456789)}) {
    const size_t c = CachingAllocator::size_class(b);
    EXPECT_GE(c, b);
    EXPECT_LE(double(c), 1.25 * double(b) + 512) << b;
    EXPECT_EQ(CachingAllocator::size_class(c), c) << "a class is its own class";
  }
}

TEST(CachingAllocator, ReleasedBlocksAreReusedWithoutTheUnderlyingAllocator) {
  FakeDevice dev;
  {
    CachingAllocator a(dev.alloc(), dev.free());
    // A training step's pattern, three times: the same sizes allocated and released.
    for (int step = 0; step < 3; ++step) {
      std::vector<void*> live;
      for (size_t bytes : {size_t(1000), size_t(40000), size_t(40000), size_t(3) << 20}) live.push_back(a.allocate(bytes));
      EXPECT_EQ(std::set<void*>(live.begin(), live.end()).size(), live.size()) << "a block handed out twice";
      for (void* p : live) a.release(p);
    }
    EXPECT_EQ(dev.mallocs, 4) << "steps 2 and 3 must come from the cache";
    EXPECT_EQ(dev.frees, 0);
    EXPECT_EQ(a.in_use_bytes(), 0u);
    EXPECT_GT(a.cached_bytes(), 0u);
    // A nearby size of the same class reuses a cached block too.
    void* p = a.allocate(39000);
    EXPECT_EQ(dev.mallocs, 4);
    a.release(p);
    EXPECT_THROW(a.release(reinterpret_cast<void*>(&dev)), Error);
  }
  EXPECT_EQ(dev.frees, 4) << "everything returned at destruction";
  EXPECT_EQ(dev.used, 0u);
}

TEST(CachingAllocator, OutOfMemoryReleasesTheCacheAndRetries) {
  FakeDevice dev;
  dev.capacity = 10000;
  CachingAllocator a(dev.alloc(), dev.free());
  void* small = a.allocate(6000);
  a.release(small);  // cached: 6144 bytes held
  void* big = a.allocate(8000);  // does not fit beside the cached block: the cache is emptied first
  EXPECT_NE(big, nullptr);
  EXPECT_EQ(dev.frees, 1);
  EXPECT_EQ(a.cached_bytes(), 0u);
  try {
    a.allocate(5000);
    ADD_FAILURE() << "allocation beyond the capacity succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of GPU memory allocating 5000 bytes"), std::string::npos) << e.what();
  }
  a.release(big);
  a.free_all();
  EXPECT_EQ(dev.used, 0u);
  EXPECT_EQ(a.in_use_bytes(), 0u);
}

TEST(CachingAllocator, BlocksStillInUseAreFreedAtDestruction) {
  FakeDevice dev;
  {
    CachingAllocator a(dev.alloc(), dev.free());
    a.allocate(100);
    a.allocate(1 << 20);
  }
  EXPECT_EQ(dev.frees, 2);
  EXPECT_EQ(dev.used, 0u);
}

}  // namespace
}  // namespace ds::model

namespace ds::model {
namespace {

// Lanes (several streams between fork_lanes and join_lanes): a block released while releases are
// held must not be handed out again until the hold ends, even for a request of its own class;
// then it is, without the underlying allocator. Held blocks survive release_cached (a lane may
// still use them) and are returned at destruction.
TEST(CachingAllocator, HeldReleasesAreReusedOnlyAfterTheHoldEnds) {
  FakeDevice dev;
  {
    CachingAllocator a(dev.alloc(), dev.free());
    void* before = a.allocate(4096);
    a.release(before);  // cached before the hold: reusable during it
    a.hold_releases(true);
    void* p = a.allocate(4096);
    EXPECT_EQ(p, before);
    a.release(p);
    EXPECT_EQ(a.held_blocks(), 1u);
    void* q = a.allocate(4096);
    EXPECT_NE(q, p) << "a block released during the hold was handed out again during it";
    EXPECT_EQ(dev.mallocs, 2);
    a.release_cached();
    EXPECT_EQ(dev.frees, 0) << "a held block was freed while a lane may use it";
    a.release(q);
    a.hold_releases(false);
    EXPECT_EQ(a.held_blocks(), 0u);
    void* r1 = a.allocate(4096);
    void* r2 = a.allocate(4096);
    EXPECT_EQ(std::set<void*>({r1, r2}), std::set<void*>({p, q}));
    EXPECT_EQ(dev.mallocs, 2);
    a.release(r1);
    a.hold_releases(true);
    void* found = a.allocate(4096);  // r1 again (cached before this hold)
    EXPECT_EQ(found, r1);
    a.release_now(found);  // waited for by the caller: reusable at once
    EXPECT_EQ(a.allocate(4096), r1);
    a.release(r1);
    a.release(r2);  // held at destruction: still returned
  }
  EXPECT_EQ(dev.frees, 2);
  EXPECT_EQ(dev.used, 0u);
}

}  // namespace
}  // namespace ds::model
