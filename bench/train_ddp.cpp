// bench_train_ddp: data-parallel MNN training steps under MPI, the trainer's step exactly
// (train/trainer.cpp): forward, Bernoulli-Gamma loss over land points, backward with the
// gradient buckets' allreduces starting as layers finish (train/gradient_buckets.h), finish()
// for the rest, Adam. bench/train_ddp.sh runs it beside PyTorch's DistributedDataParallel
// (train_ddp_torch.py) and prints the table; this program only measures our side and prints
// `key value` lines on rank 0.
//
//   mpirun -np N bench_train_ddp --threads T --batch B --steps S --warmup W [--bucket-mb M]
//     [--device cuda --communicator nccl --allreduce-dtype bf16]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_data.h"
#include "io/error.h"
#include "model/adam.h"
#include "model/loss.h"
#include "model/loss_accumulator.h"
#include "model/net.h"
#include "train/distributed.h"
#include "train/device_communicator.h"
#include "train/gradient_buckets.h"

namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// One step's phases, as the trainer's timeline names them.
// kStarted: from the start of backward to the first bucket's allreduce start; kDone: buckets
// whose allreduce this rank saw complete before backward ended (the overlap actually achieved).
enum Phase { kForward, kBackward, kWait, kOptimizer, kStep, kStarted, kDone, kPhases };

struct DdpOptions {
  int batch = 8, threads = 1, steps = 8, warmup = 2, nosync_steps = 4;
  double bucket_mb = 4;  // the trainer's default (train.allreduce_bucket_mb)
  int in_h = 0, in_w = 0;
  std::string dump_prefix, device = "cpu", communicator = "mpi", allreduce_dtype = "fp32";
};

// The timed steps on this rank; rank 0 prints the figures.
void run_ranks(const DdpOptions& o, ds::Communicator& host);

}  // namespace

int bench_main(int argc, char** argv) {
  using namespace ds;
  CLI::App app{"data-parallel MNN training steps under MPI (the trainer's step), for bench/train_ddp.sh"};
  DdpOptions o;
  std::string grid = "8x12";
  app.add_option("--batch", o.batch, "samples per step on each rank")->check(CLI::PositiveNumber);
  app.add_option("--threads", o.threads, "CPU threads per rank (0: all cores)");
  app.add_option("--steps", o.steps, "timed steps (medians are reported)")->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--bucket-mb", o.bucket_mb, "gradient bucket size in MB; 0: one bucket reduced after backward")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--nosync-steps", o.nosync_steps,
                 "timed steps without any allreduce afterwards (the exposed communication: step - these)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--grid", grid, "input grid HxW (20 channels); output (4H-3)x(4W-3). 30x53: the reference domain");
  app.add_option("--device", o.device, "cpu, cuda or auto (run.device); cuda: GPU local_rank");
  app.add_option("--communicator", o.communicator, "mpi, nccl or auto (run.communicator); nccl: even on one rank")
      ->check(CLI::IsMember({"mpi", "nccl", "auto"}));
  app.add_option("--allreduce-dtype", o.allreduce_dtype, "fp32, bf16 or fp16 on the wire (train.allreduce_dtype)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  app.add_option("--dump", o.dump_prefix, "each rank writes the initial weights and its batch to PREFIX.<rank>");
  CLI11_PARSE(app, argc, argv);
  if (std::sscanf(grid.c_str(), "%dx%d", &o.in_h, &o.in_w) != 2 || o.in_h < 2 || o.in_w < 2) {
    std::fprintf(stderr, "--grid: expected HxW, e.g. 8x12, got '%s'\n", grid.c_str());
    return 2;
  }
  auto host = make_mpi_communicator();
  // An error on one of several ranks (no GPU or no NCCL on one node, a CUDA error) ends the job
  // through MPI_Abort with its exit code: the other ranks would wait in a collective for good.
  run_or_abort_job(*host, [&] { run_ranks(o, *host); });
  return 0;
}

namespace {

void run_ranks(const DdpOptions& o, ds::Communicator& host) {
  using namespace ds;
  const int rank = host.rank(), size = host.size();
  const bool root = host.is_root();

  model::ModelSpec spec;
  spec.name = "mnn";
  spec.in_channels = 20;  // the reference experiment's predictors: z, hus, ta, ua, va at 4 levels
  spec.in_h = o.in_h;
  spec.in_w = o.in_w;
  auto be = model::make_backend(o.device, o.threads, host.local_rank());
  // As the trainer: NCCL (train/device_communicator.h) once the backend has chosen the GPU.
  const auto device_comm = make_training_communicator(o.communicator, host, *be, root);
  Communicator* comm = device_comm ? device_comm.get() : &host;
  const bool distributed = size > 1 || comm->name() == "nccl";
  model::Net net(spec, *be);
  net.init(1);
  // Rank 0's weights everywhere, as the trainer's broadcast_state does (every rank drew the same
  // ones from seed 1, and Adam's moments start at zero, so this only mirrors the trainer's start).
  {
    std::vector<float> buf;
    for (const auto& p : net.params()) {
      const std::vector<float> v = p.value->to_host();
      buf.insert(buf.end(), v.begin(), v.end());
    }
    host.broadcast(buf.data(), buf.size(), 0, "initial weights");
    size_t off = 0;
    for (const auto& p : net.params()) {
      p.value->upload(buf.data() + off);
      off += size_t(p.value->size());
    }
  }
  // Every rank its own batch (seed 2 + rank: rank 0's is bench_train_step's), so the averaged
  // gradient differs from each rank's own and the loss after the first update checks the average.
  bench::BenchBatch b = bench::make_batch(*be, net, o.batch, 2 + uint64_t(rank));
  if (!o.dump_prefix.empty()) bench::dump(o.dump_prefix + "." + std::to_string(rank), net, b);

  model::Adam adam(net.params(), *be);
  model::Tensor d_out(*be, net.output_shape(o.batch));
  std::optional<GradientBuckets> buckets;
  // As the trainer: buckets only with more than one rank (one rank trains with no allreduce).
  if (distributed)
    buckets.emplace(net.params(), size_t(o.bucket_mb * 1024 * 1024), *comm, parse_wire_type(o.allreduce_dtype));
  std::function<void(const std::vector<model::Param>&)> layer_done;
  if (distributed) layer_done = [&](const std::vector<model::Param>& ps) { buckets->ready(ps); };

  // The loss as the trainer takes it (train/trainer.cpp): valid points counted on the host once,
  // the loss added into backend memory, so a step never waits for the GPU mid-way (it downloaded
  // targets and mask and waited for the sum every step, which the trainer does not do).
  const int64_t hw = int64_t(b.y.shape().h) * b.y.shape().w;
  const int64_t valid = model::count_valid_points(b.mask.to_host().data(), b.y.to_host().data(), o.batch, hw);
  model::LossAccumulator acc(*be);
  int64_t step_index = 0;
  // On a GPU the backend runs ahead of the host: the step's clocks are read with its work done
  // (it timed how fast the host queued it). The phases' clocks in between are not synchronized,
  // which would hold the allreduces' overlap back: on a GPU they time the host's side.
  const auto synchronized_now = [&] {
    be->synchronize();
    return Clock::now();
  };
  // The trainer's step. sync false: the same step with no allreduce at all (each rank updates
  // with its own gradient), to time what the communication adds to a step.
  auto step = [&](bool sync, double* phase) {
    const auto t0 = synchronized_now();
    if (distributed && sync) buckets->begin(1.0f / float(size));  // rows here / rows in the global batch
    const model::Tensor& out = net.forward(b.x);
    model::masked_loss_accumulate(*be, model::LossKind::kBernoulliGamma, out, b.y, b.mask, valid, 1.0, step_index,
                                  acc.data(), &d_out);
    const auto t1 = Clock::now();
    net.backward(d_out, sync ? layer_done : std::function<void(const std::vector<model::Param>&)>{});
    const auto t2 = Clock::now();
    std::vector<Communicator::OpSpan> spans;
    if (distributed && sync) spans = buckets->finish("gradients of step " + std::to_string(step_index));
    const auto t3 = Clock::now();
    adam.step(1e-4);
    const auto t4 = synchronized_now();
    ++step_index;
    if (phase) {
      phase[kForward] = seconds(t0, t1);
      phase[kBackward] = seconds(t1, t2);
      phase[kWait] = seconds(t2, t3);
      phase[kOptimizer] = seconds(t3, t4);
      phase[kStep] = seconds(t0, t4);
      phase[kStarted] = spans.empty() ? 0 : seconds(t1, spans.front().start);
      phase[kDone] = double(std::count_if(spans.begin(), spans.end(), [&](const auto& s) { return s.end <= t2; }));
    }
  };

  // Rank 0's losses of the first two steps, read from the accumulator after each (a wait): two
  // untimed steps before the warm-up.
  std::vector<double> losses;
  for (int i = 0; i < 2; ++i) {
    acc.reset();
    step(true, nullptr);
    losses.push_back(acc.read()[0]);
  }
  for (int i = 0; i < o.warmup; ++i) step(true, nullptr);
  // Every rank's timings, each in its own slice, summed across ranks: rank 0 then sees all.
  const size_t per_rank = size_t(o.steps + o.nosync_steps) * kPhases;
  std::vector<double> all(per_rank * size_t(size), 0.0);
  double* mine = all.data() + per_rank * size_t(rank);
  comm->barrier("start of the timed steps");
  // The steps without allreduce alternate with the others, so that both kinds see the same
  // machine (others' jobs come and go); they leave the ranks' weights apart, which costs nothing.
  for (int i = 0; i < std::max(o.steps, o.nosync_steps); ++i) {
    if (i < o.steps) step(true, mine + size_t(i) * kPhases);
    if (distributed && i < o.nosync_steps) step(false, mine + size_t(o.steps + i) * kPhases);
  }
  comm->allreduce_sum(all.data(), all.size(), "timings");
  if (!root) return;

  auto at = [&](int r, int i, Phase p) { return all[per_rank * size_t(r) + size_t(i) * kPhases + p]; };
  // A step ends for the job when its slowest rank ends it: per step the maximum over ranks.
  auto step_median = [&](int first, int count) {
    std::vector<double> v;
    for (int i = first; i < first + count; ++i) {
      double m = 0;
      for (int r = 0; r < size; ++r) m = std::max(m, at(r, i, kStep));
      v.push_back(m);
    }
    return median(v);
  };
  auto phase_median = [&](Phase p) {  // over steps and ranks
    std::vector<double> v;
    for (int r = 0; r < size; ++r)
      for (int i = 0; i < o.steps; ++i) v.push_back(at(r, i, p));
    return median(v);
  };
  const double step_s = step_median(0, o.steps);
  // The share of a step spent in finish(), waiting for the allreduces after backward: the median
  // over ranks and steps of each step's share (robust to a step where another job took the core).
  std::vector<double> shares;
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < o.steps; ++i) shares.push_back(at(r, i, kWait) / at(r, i, kStep));
  const double wait_share = median(shares);

  std::printf("allreduce_dtype %s\n", o.allreduce_dtype.c_str());
  std::printf("backend %s\ncommunicator %s\nranks %d\nthreads %d\nbatch_per_rank %d\n", be->name().c_str(),
              comm->name().c_str(), size, o.threads, o.batch);
  std::printf("grid %dx%d -> %dx%d\nparameters %lld\n", o.in_h, o.in_w, net.output_shape(1).h, net.output_shape(1).w,
              static_cast<long long>(net.parameter_count()));
  if (buckets) {
    std::string sizes;
    for (size_t k = 0; k < buckets->bucket_count(); ++k)
      sizes += (k ? "," : "") + std::to_string(buckets->bucket_floats(k) * sizeof(float) / 1024);
    std::printf("buckets %zu of %s KiB (bucket-mb %g)\n", buckets->bucket_count(), sizes.c_str(), o.bucket_mb);
  } else {
    std::printf("buckets none (1 rank: no allreduce)\n");
  }
  // Rank 0's losses of the first two steps: the initial weights', then after one Adam step on
  // the gradient averaged over every rank's batch. The peer must print the same.
  std::printf("loss0 %.7g\nloss1 %.7g\n", losses.at(0), losses.size() > 1 ? losses[1] : -1.0);
  std::printf("step_s %.4f\n", step_s);
  for (int r = 0; r < size; ++r) {
    std::vector<double> v;
    for (int i = 0; i < o.steps; ++i) v.push_back(at(r, i, kStep));
    std::printf("rank%d_step_s %.4f\n", r, median(v));
  }
  std::printf("samples_per_s %.4f\nsamples_per_s_per_rank %.4f\n", double(o.batch) * size / step_s, o.batch / step_s);
  std::printf("forward_s %.4f\nbackward_s %.4f\nwait_s %.4f\noptimizer_s %.4f\n", phase_median(kForward),
              phase_median(kBackward), phase_median(kWait), phase_median(kOptimizer));
  std::printf("wait_share %.4f\n", wait_share);
  if (buckets)
    std::printf("first_bucket_start_share %.4f\nbuckets_done_in_backward %g\n",
                phase_median(kStarted) / phase_median(kBackward), phase_median(kDone));
  if (distributed && o.nosync_steps > 0) {
    // What the allreduces add to a step, overlapped or not: packing, progress calls, the wait.
    const double nosync = step_median(o.steps, o.nosync_steps);
    std::printf("step_nosync_s %.4f\nexposed_share %.4f\n", nosync, (step_s - nosync) / step_s);
  } else {
    std::printf("step_nosync_s %.4f\nexposed_share 0\n", step_s);
  }
}

}  // namespace

// Any failure (no GPU, no NCCL, an NCCL or CUDA error) as one line and an exit code, not a
// terminate() with a stack trace.
int main(int argc, char** argv) {
  try {
    return bench_main(argc, argv);
  } catch (const ds::Error& e) {
    std::fprintf(stderr, "bench_train_ddp: %s\n", e.what());
    return e.code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train_ddp: %s\n", e.what());
    return 1;
  }
}
