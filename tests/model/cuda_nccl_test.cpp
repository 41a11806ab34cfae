// The plugin's NCCL communicator (model/cuda/nccl_communicator.cu) on one GPU, one rank: device
// memory in and out, ordered against the backend's stream; one rank's sum is exact, its 16-bit
// sum is the 16-bit rounding (model/kernels/wire16.h); host values go through the host
// communicator. Skipped without a GPU; under DOWNSCALE_REQUIRE_GPU=1 (scripts/gpu_check.sh) a
// missing GPU or a missing libnccl.so.2 is a failure naming the cause.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "model/backend.h"
#include "model/kernels/wire16.h"
#include "model/nccl_plugin.h"
#include "model/tensor.h"
#include "train/distributed.h"

namespace ds::model {
namespace {

// The host side of one process (what train/distributed.cpp's single-process communicator does).
class OneRank final : public Communicator {
 public:
  int started = 0;
  std::string name() const override { return "one"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  void start_allreduce_sum(float*, size_t) override { ++started; }
  void start_allreduce_sum(double*, size_t) override { ++started; }
  void start_broadcast(float*, size_t, int) override { ++started; }
  void start_barrier() override { ++started; }
  void progress() override {}
  std::vector<OpSpan> wait_all(const std::string&) override { return {}; }
  std::vector<std::string> gather(const std::string& mine, int) override { return {mine}; }
  std::vector<std::string> local_allgather(const std::string& mine) override { return {mine}; }
  [[noreturn]] void abort(const std::string& m, int) override {
    ADD_FAILURE() << "abort: " << m;
    std::abort();
  }
};

bool required() {
  const char* r = std::getenv("DOWNSCALE_REQUIRE_GPU");
  return r && std::string(r) == "1";
}

TEST(ModelCudaNccl, OneRankCollectivesOnDeviceMemory) {
  if (!cuda_available()) {
    if (required()) FAIL() << "DOWNSCALE_REQUIRE_GPU=1 but " << cuda_probe().reason;
    GTEST_SKIP() << "no GPU (" << cuda_probe().reason << ")";
  }
  const std::string why_not = nccl_unavailable_reason();
  if (!why_not.empty()) {
    if (required()) FAIL() << "DOWNSCALE_REQUIRE_GPU=1 but no NCCL: " << why_not;
    GTEST_SKIP() << "no NCCL: " << why_not;
  }
  auto gpu = make_cuda_backend(0);
  OneRank host;
  auto comm = make_nccl_communicator(host, *gpu);
  ASSERT_TRUE(comm);
  EXPECT_EQ(comm->name(), "nccl");
  EXPECT_TRUE(comm->device_memory());
  EXPECT_EQ(comm->size(), 1);

  const int64_t n = 100003;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float((i * 7919) % 2001 - 1000) * 1.37e-3f * float(1 + i % 5);
  for (bool watch : {true, false}) {  // stall limits on: the host polls; off: only the stream waits
    comm->set_stall_limits(watch ? 60 : 0, watch ? 600 : 0);
    Tensor t(*gpu, {1, 1, 1, n}), u(*gpu, {1, 1, 1, n}), w(*gpu, {1, 1, 1, n});
    t.upload(v.data());
    u.upload(v.data());
    w.upload(v.data());
    double d = 2.5;
    comm->start_allreduce_sum(t.data(), size_t(n));
    comm->start_broadcast(u.data(), size_t(n), 0);
    comm->start_compressed_allreduce_sum(w.data(), size_t(n), Communicator::WireType::kBf16);
    comm->start_allreduce_sum(&d, 1);  // host memory: through the host communicator
    const auto spans = comm->wait_all("test");
    EXPECT_EQ(spans.size(), 3u);
    // Queued after wait_all on the backend's stream: must see the collectives' results.
    gpu->scale(n, 2.0f, t.data());
    const auto got_t = t.to_host(), got_u = u.to_host(), got_w = w.to_host();
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = size_t(i);
      ASSERT_EQ(got_t[k], 2.0f * v[k]) << "allreduce, watch " << watch << ", [" << i << "]";
      ASSERT_EQ(got_u[k], v[k]) << "broadcast [" << i << "]";
      ASSERT_EQ(got_w[k], kernels::bf16_to_float(kernels::float_to_bf16(v[k]))) << "bf16 allreduce [" << i << "]";
    }
    EXPECT_EQ(d, 2.5);
  }
  EXPECT_GE(host.started, 2);  // the doubles went through the host
  // fp16 too (the other packing kernel and ncclFloat16).
  Tensor h(*gpu, {1, 1, 1, n});
  h.upload(v.data());
  comm->start_compressed_allreduce_sum(h.data(), size_t(n), Communicator::WireType::kFp16);
  comm->wait_all("fp16");
  const auto got_h = h.to_host();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(got_h[size_t(i)], kernels::fp16_to_float(kernels::float_to_fp16(v[size_t(i)]))) << "fp16 [" << i << "]";
}

// No NCCL library is a reason naming it and what to do, in a process of its own (the library is
// looked for once a process): the CUDA plugin loads without a GPU, so this runs here too. It
// skipped wherever NCCL was installed (every machine it ran on, GPU or not) and checked nothing.
TEST(ModelCudaNcclDeathTest, NoNcclLibraryIsAReason) {
  // (The probe loads the plugin, not NCCL: the child, a fresh process, looks for NCCL first.)
  if (const std::string why = cuda_probe().reason; why.find("plugin") != std::string::npos)
    GTEST_SKIP() << why;
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("DOWNSCALE_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
        const std::string why_not = nccl_unavailable_reason();
        std::fprintf(stderr, "reason: %s\n", why_not.c_str());
        std::exit(why_not.empty() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0),
      "reason: /nonexistent/libnccl.so.2 does not load \\(.*DOWNSCALE_NCCL_LIBRARY\\)");
}

}  // namespace
}  // namespace ds::model
