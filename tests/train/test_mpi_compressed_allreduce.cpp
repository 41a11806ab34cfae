// The MPI communicator's 16-bit allreduce (train.allreduce_dtype bf16/fp16). Runs only under
// `mpirun -np 2` (the ctest train_mpi_compressed_allreduce); alone it skips. Each rank rounds its
// values to 16 bits, the user sum adds them in FP32 and rounds once more: with two ranks the
// result is exactly to16(to16(a) + to16(b)), within 3 roundings (3 x 2^-8 relative for bf16,
// 3 x 2^-11 for fp16, of |a| + |b|; plus 3 x 2^-25 absolute for fp16, whose values below 2^-14
// are subnormal with a fixed step of 2^-24) of the FP32 allreduce, and the same on both ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "model/kernels/wire16.h"
#include "train/distributed.h"

using namespace ds;
namespace k = ds::model::kernels;

namespace {
std::vector<float> values_of(int rank, size_t n) {
  std::mt19937 rng(1234 + rank);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = u(rng) * std::ldexp(1.0f, int(i % 24) - 16);  // 2^-16 .. 2^7
  return v;
}
}  // namespace

TEST(MpiCompressedAllreduce, SumsIn16BitsWithinRoundingOfFp32) {
  const char* launched = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!launched || std::string(launched) != "2") GTEST_SKIP() << "run under mpirun -np 2";
  auto comm = make_mpi_communicator();
  ASSERT_EQ(comm->size(), 2);
  const size_t n = 100003;
  const auto a = values_of(0, n), b = values_of(1, n), mine = values_of(comm->rank(), n);
  std::vector<float> fp32 = mine;
  comm->allreduce_sum(fp32.data(), n, "fp32");
  for (auto wire : {Communicator::WireType::kBf16, Communicator::WireType::kFp16}) {
    const k::Wire16 w = wire == Communicator::WireType::kBf16 ? k::Wire16::kBf16 : k::Wire16::kFp16;
    const double rel = 3 * std::ldexp(1.0, w == k::Wire16::kBf16 ? -8 : -11);
    const double abs_floor = w == k::Wire16::kBf16 ? 0.0 : 3 * std::ldexp(1.0, -25);
    std::vector<float> got = mine;
    double dsum = comm->rank() + 1;  // a double collective in the same phase
    comm->start_compressed_allreduce_sum(got.data(), n, wire);
    comm->start_allreduce_sum(&dsum, 1);
    comm->wait_all("compressed");
    EXPECT_EQ(dsum, 3.0);
    for (size_t i = 0; i < n; ++i) {
      const float want = k::from_wire16(w, k::to_wire16(w, k::from_wire16(w, k::to_wire16(w, a[i])) +
                                                              k::from_wire16(w, k::to_wire16(w, b[i]))));
      ASSERT_EQ(got[i], want) << i;
      ASSERT_LE(std::abs(double(got[i]) - fp32[i]), rel * (std::abs(a[i]) + std::abs(b[i])) + abs_floor) << i;
    }
    // The same result on both ranks.
    std::vector<float> other = got;
    comm->broadcast(other.data(), n, 0, "rank 0's result");
    EXPECT_EQ(other, got);
  }
}
