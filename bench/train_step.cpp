// bench_train_step: MNN training steps (forward, Bernoulli-Gamma loss, backward, Adam) and
// forward-only passes at the reference input size on the CPU backend, as samples per second.
// bench/train_step.sh runs it interleaved with the PyTorch peer and prints the ratio; this program
// only measures our side and prints `key value` lines for that script.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench/bench_data.h"
#include "bench/flop_count.h"
#include "model/adam.h"
#include "model/loss.h"
#include "model/net.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Median seconds of `steps` calls of f after `warmup` untimed ones (the first call builds the
// oneDNN primitives and touches every buffer).
template <class F>
double time_median(int warmup, int steps, F&& f) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> s;
  for (int i = 0; i < steps; ++i) {
    const auto t = Clock::now();
    f();
    s.push_back(std::chrono::duration<double>(Clock::now() - t).count());
  }
  return median(s);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ds;
  CLI::App app{"MNN training-step and forward throughput on the CPU backend"};
  int batch = 4, threads = 2, steps = 3, warmup = 1;
  std::string dump_path, what = "both";
  app.add_option("--batch", batch, "samples per step")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "CPU threads (0: all cores)");
  app.add_option("--steps", steps, "timed steps (the median is reported)")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--measure", what, "train, forward or both")->check(CLI::IsMember({"train", "forward", "both"}));
  app.add_option("--dump", dump_path, "write the initial weights and the batch here, for the PyTorch peer");
  CLI11_PARSE(app, argc, argv);

  model::ModelSpec spec;
  spec.name = "mnn";
  spec.in_channels = 20;  // the reference experiment: z, hus, ta, ua, va at 4 levels
  spec.in_h = 30;
  spec.in_w = 53;
  const bench::FlopCount flops = bench::count_flops(spec);

  auto be = model::make_cpu_backend(threads);
  model::Net net(spec, *be);
  net.init(1);
  bench::BenchBatch b = bench::make_batch(*be, net, batch, 2);
  if (!dump_path.empty()) bench::dump(dump_path, net, b);

  std::printf("backend %s\nbatch %d\n", be->name().c_str(), batch);
  std::printf("gflop_forward_per_sample %.4f\ngflop_train_per_sample %.4f\n", flops.forward * 1e-9,
              flops.train() * 1e-9);

  model::Adam adam(net.params(), *be);
  model::Tensor d_out(*be, net.output_shape(batch));
  double first_loss = -1;
  auto train_step = [&] {
    const model::Tensor& out = net.forward(b.x);
    const double loss = model::bernoulli_gamma_loss(*be, out, b.y, b.mask, &d_out);
    if (first_loss < 0) first_loss = loss;
    net.backward(d_out);
    adam.step(1e-4);
  };
  if (what != "forward") {
    // The first loss is the initial weights' on the dumped batch: the peer must print the same.
    const double s = time_median(warmup, steps, train_step);
    std::printf("loss0 %.7g\ntrain_step_s %.4f\ntrain_samples_per_s %.4f\ntrain_gflops %.2f\n", first_loss, s,
                batch / s, flops.train() * batch / s * 1e-9);
  }
  if (what != "train") {
    const double s = time_median(warmup, steps, [&] { net.forward(b.x); });
    std::printf("forward_s %.4f\nforward_samples_per_s %.4f\nforward_gflops %.2f\n", s, batch / s,
                flops.forward * batch / s * 1e-9);
  }
  return 0;
}
