// bench_train_step: MNN training steps (forward, Bernoulli-Gamma loss, backward, Adam) and
// forward-only passes at the reference input size, on the CPU backend or a GPU (--device), as
// samples per second.
// bench/train_step.sh runs it interleaved with the PyTorch peer and prints the ratio; this program
// only measures our side and prints `key value` lines for that script.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench/bench_data.h"
#include "io/error.h"
#include "bench/flop_count.h"
#include "model/adam.h"
#include "model/backend.h"
#include "model/loss.h"
#include "model/loss_accumulator.h"
#include "model/math_mode.h"
#include "model/net.h"
#include "io/atomic_file.h"
#include "train/layer_profile.h"
#include "train/loss_scaler.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Median seconds of `steps` calls of f after `warmup` untimed ones (the first call builds the
// oneDNN primitives or picks cuDNN's algorithms and touches every buffer). Each call ends with
// the backend's synchronize(), so a GPU's queued work is inside the time it is charged to.
template <class F>
double time_median(ds::model::Backend& be, int warmup, int steps, F&& f) {
  for (int i = 0; i < warmup; ++i) f();
  be.synchronize();
  std::vector<double> s;
  for (int i = 0; i < steps; ++i) {
    const auto t = Clock::now();
    f();
    be.synchronize();
    s.push_back(std::chrono::duration<double>(Clock::now() - t).count());
  }
  return median(s);
}

}  // namespace

static int run(int argc, char** argv) {
  using namespace ds;
  CLI::App app{"MNN training-step and forward throughput on the CPU backend or a GPU"};
  int batch = 4, threads = 2, steps = 3, warmup = 1, curve = 0;
  std::string dump_path, what = "both", device = "cpu", math = "tf32", grid = "30x53", profile_out;
  bool profile_layers = false;
  app.add_option("--batch", batch, "samples per step")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "CPU threads (0: all cores)");
  app.add_option("--steps", steps, "timed steps (the median is reported)")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_option("--measure", what, "train, forward or both")->check(CLI::IsMember({"train", "forward", "both"}));
  app.add_option("--dump", dump_path, "write the initial weights and the batch here, for the PyTorch peer");
  app.add_option("--device", device, "cpu, cuda or auto (as run.device)")->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  app.add_option("--math", math,
                 "tf32, fp32, bf16 or fp16 (as train.precision; the CPU computes tf32 in FP32; fp16 trains with "
                 "dynamic loss scaling, as the trainer does)")
      ->check(CLI::IsMember({"tf32", "fp32", "bf16", "fp16"}));
  app.add_option("--loss-curve", curve,
                 "first train this many steps on the batch and print each loss (loss_<i> lines, and skip_<i> "
                 "after a step that fp16's loss scaling skipped), to compare devices or peers step by step; the "
                 "timings then start from the trained weights");
  app.add_flag("--profile-layers", profile_layers,
               "instead: time forward, loss, each layer's backward (synchronized per layer) and the optimizer, "
               "medians of --steps after --warmup, for the scaling model (docs/scaling.md); prints it as JSON");
  app.add_option("--out", profile_out, "--profile-layers: also write the JSON here (downscale train "
                 "--predict-scaling --profile FILE)");
  app.add_option("--grid", grid, "input grid HxW (20 channels); 30x53: the reference domain");
  CLI11_PARSE(app, argc, argv);

  model::ModelSpec spec;
  spec.name = "mnn";
  spec.in_channels = 20;  // the reference experiment: z, hus, ta, ua, va at 4 levels
  if (std::sscanf(grid.c_str(), "%dx%d", &spec.in_h, &spec.in_w) != 2 || spec.in_h < 2 || spec.in_w < 2) {
    std::fprintf(stderr, "bench_train_step: --grid: expected HxW, e.g. 30x53, got '%s'\n", grid.c_str());
    return 2;
  }
  const bench::FlopCount flops = bench::count_flops(spec);

  std::unique_ptr<model::Backend> be;
  try {
    be = model::make_backend(device, threads);
    model::apply_math_mode(*be, math, false);  // bf16/fp16 where the backend cannot: an error
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_train_step: %s\n", e.what());
    return int(e.code());
  }
  model::Net net(spec, *be);
  net.init(1);
  bench::BenchBatch b = bench::make_batch(*be, net, batch, 2);
  if (!dump_path.empty()) bench::dump(dump_path, net, b);

  if (profile_layers) {
    try {
      const LayerProfile p =
          measure_layer_profile(net, *be, model::LossKind::kBernoulliGamma, b.x, b.y, b.mask, warmup, steps, math);
      std::fputs(p.to_json().c_str(), stdout);
      if (!profile_out.empty()) write_file_atomically(profile_out, p.to_json());
      std::fprintf(stderr, "bench_train_step: profile of %zu layers on %s: forward %.4f s, backward %.4f s (sum of "
                   "synchronized layers %.4f s), optimizer %.4f s%s%s\n", p.layers.size(), p.device.c_str(),
                   p.forward_s, p.backward_s, p.layers_backward_s(), p.optimizer_s,
                   profile_out.empty() ? "" : "; wrote ", profile_out.c_str());
    } catch (const Error& e) {
      std::fprintf(stderr, "bench_train_step: --profile-layers: %s\n", e.what());
      return e.code();
    }
    return 0;
  }
  std::printf("backend %s, math %s\nbatch %d\n", be->name().c_str(), math.c_str(), batch);
  // Which activations are 16-bit (Net::set_activations16): A/B runs say which side they measured.
  const std::string act16 = net.activations16_summary();
  std::printf("%s\nactivation_bytes %lld\n", act16.empty() ? "activations fp32" : act16.c_str(),
              static_cast<long long>(net.activation_bytes(batch)));
  // And which are channel-blocked (Net::set_blocked_activations): none for MNN's channel counts.
  const std::string blocked = net.blocked_summary();
  std::printf("layout %s\n", blocked.empty() ? "nchw" : blocked.c_str());
  std::printf("gflop_forward_per_sample %.4f\ngflop_train_per_sample %.4f\n", flops.forward * 1e-9,
              flops.train() * 1e-9);

  model::Adam adam(net.params(), *be);
  model::Tensor d_out(*be, net.output_shape(batch));
  // As the trainer: dynamic loss scaling under fp16 (one all_finite per parameter each step,
  // inside the timing as it is in training), none otherwise.
  LossScaler scaler("", math);
  // The loss as the trainer takes it (train/trainer.cpp): valid points counted on the host once,
  // when the batch is made, and the loss added into backend memory, so a step never waits for
  // the GPU mid-way. The PyTorch peer does not read its loss inside the timed steps either.
  const int64_t hw = int64_t(b.y.shape().h) * b.y.shape().w;
  const int64_t valid = model::count_valid_points(b.mask.to_host().data(), b.y.to_host().data(), batch, hw);
  model::LossAccumulator acc(*be);
  // The first loss is the initial weights' on the dumped batch: the peer must print the same.
  const double first_loss = model::bernoulli_gamma_loss(*be, net.forward(b.x), b.y, b.mask, nullptr);
  int64_t step_index = 0;
  auto train_step = [&] {
    const model::Tensor& out = net.forward(b.x);
    model::masked_loss_accumulate(*be, model::LossKind::kBernoulliGamma, out, b.y, b.mask, valid, 1.0, step_index++,
                                  acc.data(), &d_out);
    scaler.scale_loss_gradient(*be, d_out);
    net.backward(d_out);
    if (scaler.unscale_or_skip(*be, net.params())) adam.step(1e-4);
  };
  for (int i = 0; i < curve; ++i) {
    acc.reset();
    const int64_t skipped = scaler.skipped_total();
    train_step();
    std::printf("loss_%d %.7g\n", i, acc.read()[0]);
    // FP16's dynamic scaling skips a step whose gradients overflow: the weights stay, so the
    // next loss belongs to as many updates as this one's (scripts/gpu_check.sh aligns on it).
    if (scaler.skipped_total() > skipped) std::printf("skip_%d\n", i);
  }
  if (curve && scaler.enabled())
    std::printf("skipped_steps %lld\nloss_scale %g\n", (long long)scaler.skipped_total(), scaler.scale());
  if (what != "forward") {
    const double s = time_median(*be, warmup, steps, train_step);
    std::printf("loss0 %.7g\ntrain_step_s %.4f\ntrain_samples_per_s %.4f\ntrain_gflops %.2f\n", first_loss, s,
                batch / s, flops.train() * batch / s * 1e-9);
  }
  if (what != "train") {
    const double s = time_median(*be, warmup, steps, [&] { net.forward(b.x); });
    std::printf("forward_s %.4f\nforward_samples_per_s %.4f\nforward_gflops %.2f\n", s, batch / s,
                flops.forward * batch / s * 1e-9);
  }
  return 0;
}

int main(int argc, char** argv) {
  // A GPU failure mid-run (cuDNN without a 16-bit kernel for a shape, out of memory...): one line
  // naming the cause, exit 1, not an abort.
  try {
    return run(argc, argv);
  } catch (const ds::Error& e) {
    std::fprintf(stderr, "bench_train_step: %s\n", e.what());
    return int(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train_step: %s\n", e.what());
    return 1;
  }
}
