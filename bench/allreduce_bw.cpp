// bench_allreduce_bw: the Communicator's allreduce (train/distributed.h, what the gradient
// buckets use) timed on a 1-float buffer (its latency) and on a bucket-sized one, as nccl-tests
// reports it: busbw = 2(P-1)/P x bytes / time (doc/PERFORMANCE.md). The scaling model's
// "measured link" (downscale train --predict-scaling --busbw --latency-us; bench/scaling_check.sh).
//   mpirun -np 2 bench_allreduce_bw [--mb 4] [--reps 20]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "train/distributed.h"

namespace {
using Clock = std::chrono::steady_clock;
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"allreduce latency and bus bandwidth of the trainer's MPI communicator"};
  double mb = 4;
  int reps = 20;
  app.add_option("--mb", mb, "the large buffer, MB (train.allreduce_bucket_mb)")->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "timed allreduces of each size (medians)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  auto comm = ds::make_mpi_communicator();
  const int p = comm->size();
  auto time = [&](size_t n) {
    std::vector<float> buf(n, 1.0f);
    std::vector<double> s;
    for (int i = 0; i < reps + 2; ++i) {
      comm->barrier("allreduce timing");
      const auto t = Clock::now();
      comm->allreduce_sum(buf.data(), n, "allreduce timing");
      if (i >= 2) s.push_back(std::chrono::duration<double>(Clock::now() - t).count());
    }
    // The slowest rank's time: every rank's median, maximum over ranks.
    double m = median(s);
    std::vector<double> all(size_t(p), 0.0);
    all[size_t(comm->rank())] = m;
    comm->allreduce_sum(all.data(), all.size(), "timings");
    return *std::max_element(all.begin(), all.end());
  };
  const size_t n = size_t(mb * 1024 * 1024 / sizeof(float));
  const double lat = time(1), big = time(n);
  const double bytes = double(n) * sizeof(float);
  const double busbw = p > 1 ? 2.0 * (p - 1) / p * bytes / std::max(big - lat, 1e-9) : 0;
  if (comm->is_root())
    std::printf("communicator %s\nranks %d\nlatency_us %.1f\nbytes %.0f\nallreduce_s %.6f\nbusbw_gbs %.4f\n",
                comm->name().c_str(), p, lat * 1e6, bytes, big, busbw * 1e-9);
  return 0;
}
