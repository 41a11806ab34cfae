#include "train/benchmark.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <random>
#include <tuple>

#include "io/atomic_file.h"
#include "io/error.h"
#include "io/stop_signal.h"
#include "model/loss_accumulator.h"
#include "model/math_mode.h"
#include "model/net.h"
#include "model/sgd.h"
#include "train/benchmark_model.h"
#include "train/device_communicator.h"
#include "train/gradient_buckets.h"
#include "train/layer_profile.h"
#include "train/loss_scaler.h"

namespace ds {

namespace {

using Clock = std::chrono::steady_clock;

// "cpu: <model name from /proc/cpuinfo>" or "cuda: <GPU name>" (from the backend's name,
// "cuda (device 0: NVIDIA H100 80GB HBM3, cuDNN 91000)").
std::string device_name(const std::string& backend) {
  if (backend.rfind("cuda", 0) == 0) {
    const size_t a = backend.find(": "), b = backend.find(", cuDNN");
    return "cuda: " + (a != std::string::npos && b != std::string::npos && b > a ? backend.substr(a + 2, b - a - 2)
                                                                                  : backend);
  }
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      std::string name = line.substr(line.find(':') + 1);
      name.erase(0, name.find_first_not_of(' '));
      return "cpu: " + name;
    }
  return "cpu";
}

std::string human_bytes(int64_t b) {
  if (b < 0) return "unknown";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace

void mean_ci95(const std::vector<double>& v, double* mean, double* ci95) {
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= double(std::max<size_t>(v.size(), 1));
  for (double x : v) s += (x - m) * (x - m);
  *mean = m;
  *ci95 = 1.96 * std::sqrt(s / double(std::max<size_t>(v.size(), 1)));
}

double one_rank_reference(const std::string& path, const BenchmarkOptions& opts, const BenchmarkResult& r,
                          int* other_threads) {
  std::ifstream in(path);
  double ref = 0;
  if (other_threads) *other_threads = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;  // a torn or foreign line: not a reference
    if (j.value("ranks", 0) == 1 && j.value("model", "") == opts.model && j.value("batch", 0) == opts.batch_size &&
        j.value("image_size", 0) == r.image_size && j.value("device", "") == r.device &&
        j.value("precision", "") == opts.precision && j.contains("mean") && j["mean"].is_number()) {
      if (r.threads > 0 && j.contains("threads") && j["threads"].is_number_integer() &&
          j["threads"].get<int>() != r.threads) {
        if (other_threads) *other_threads = j["threads"].get<int>();
        continue;
      }
      ref = j["mean"].get<double>();
    }
  }
  return ref;
}

std::string benchmark_json_line(const BenchmarkOptions& opts, const BenchmarkResult& r, double efficiency,
                                const std::string& allreduce_dtype) {
  nlohmann::ordered_json j;
  j["model"] = opts.model;
  j["batch"] = opts.batch_size;
  j["image_size"] = r.image_size;
  j["ranks"] = r.ranks;
  j["nodes"] = r.nodes;
  j["device"] = r.device;
  j["backend"] = r.backend;
  j["precision"] = opts.precision;
  j["threads"] = r.threads > 0 ? nlohmann::ordered_json(r.threads) : nlohmann::ordered_json(nullptr);
  j["allreduce_dtype"] = allreduce_dtype;
  j["mean"] = r.mean;  // img/s per rank
  j["ci95"] = r.ci95;
  j["total"] = r.total;
  j["unit"] = "images/s";  // `benchmark --plot` labels its axis by it (slurm/scaling.sh's lines: samples/s)
  j["total_ci95"] = r.total_ci95;
  j["efficiency"] = efficiency > 0 ? nlohmann::ordered_json(efficiency) : nlohmann::ordered_json(nullptr);
  j["iter_img_per_s"] = r.iter_img_per_s;
  j["parameters"] = r.parameters;
  j["activation_bytes"] = r.activation_bytes >= 0 ? nlohmann::ordered_json(r.activation_bytes) : nlohmann::ordered_json(nullptr);
  j["warmup_batches"] = opts.warmup_batches;
  j["batches_per_iter"] = opts.batches_per_iter;
  j["iters"] = opts.iters;
  const char* job = std::getenv("SLURM_JOB_ID");
  j["slurm_job_id"] = job && *job ? nlohmann::ordered_json(job) : nlohmann::ordered_json(nullptr);
  return j.dump();
}

// --profile-layers: the layer profile instead of the timed iterations, written as JSON, and the
// layers that take most of the step printed (forward + backward, each synchronized per layer).
static void write_benchmark_profile(const BenchmarkOptions& opts, model::Net& net, model::Backend& be,
                                    const model::Tensor& x, const LossStep& loss,
                                    const std::function<void()>& optimizer_step, std::ostream& out) {
  out << "Profiling layers (" << opts.iters << " steps after " << opts.warmup_batches << ")...\n" << std::flush;
  const LayerProfile p = measure_layer_profile(net, be, x, loss, optimizer_step, opts.warmup_batches, opts.iters,
                                               opts.precision);
  write_file_atomically(opts.profile_layers, p.to_json());
  std::vector<const LayerTime*> by_time;
  for (const LayerTime& l : p.layers) by_time.push_back(&l);
  std::stable_sort(by_time.begin(), by_time.end(), [](const LayerTime* a, const LayerTime* b) {
    return a->forward_s + a->backward_s > b->forward_s + b->backward_s;
  });
  double layers_s = 0;
  for (const LayerTime& l : p.layers) layers_s += l.forward_s + l.backward_s;
  out << fmt::format("Step: forward {:.2f} ms, loss {:.2f} ms, backward {:.2f} ms, optimizer {:.2f} ms; {} layers, "
                     "{:.2f} ms synchronized one by one\n",
                     p.forward_s * 1e3, p.loss_s * 1e3, p.backward_s * 1e3, p.optimizer_s * 1e3, p.layers.size(),
                     layers_s * 1e3);
  out << "Slowest layers (forward + backward ms, share of the layers' sum):\n";
  for (size_t i = 0; i < by_time.size() && i < 15; ++i) {
    const LayerTime& l = *by_time[i];
    out << fmt::format("  {:<28} {:8.3f} + {:8.3f}  {:5.1f}%\n", l.name, l.forward_s * 1e3, l.backward_s * 1e3,
                       layers_s > 0 ? 100 * (l.forward_s + l.backward_s) / layers_s : 0.0);
  }
  out << "Wrote " << opts.profile_layers << "\n" << std::flush;
}

BenchmarkResult run_benchmark(const BenchmarkOptions& opts, Communicator& host, std::ostream& out) {
  const bool root = host.is_root();
  BenchmarkResult r;
  r.image_size = opts.image_size > 0 ? opts.image_size : benchmark_default_image_size(opts.model);
  for (const auto& [flag, v, least] : {std::tuple<const char*, int, int>{"--batch-size", opts.batch_size, 1},
                                       {"--num-batches-per-iter", opts.batches_per_iter, 1},
                                       {"--num-iters", opts.iters, 1},
                                       {"--num-warmup-batches", opts.warmup_batches, 0}})
    if (v < least)
      throw UsageError(std::string(flag) + " is " + std::to_string(v) + ", must be " +
                       (least ? "positive" : "0 or more"));
  const std::string wire_dtype = opts.fp16_allreduce ? "fp16" : "fp32";

  const CpuThreads threads = cpu_threads(host, opts.threads, "--threads");
  auto be = model::make_backend(opts.device, threads.threads, host.local_rank(), "--device");
  model::apply_math_mode(*be, opts.precision, false);
  r.backend = be->name();
  r.device = device_name(r.backend);
  const bool on_gpu = r.backend.rfind("cuda", 0) == 0;
  if (!on_gpu && !threads.oversubscribed.empty()) spdlog::warn("{}", threads.oversubscribed);
  r.threads = on_gpu ? 0 : threads.threads;
  const auto device_comm = make_training_communicator(opts.communicator, host, *be, false);
  Communicator& comm = device_comm ? *device_comm : host;
  const bool distributed = comm.size() > 1 || comm.name() == "nccl";
  r.ranks = comm.size();
  if (!opts.profile_layers.empty() && distributed)
    throw UsageError("--profile-layers profiles one rank without communication; run it without mpirun/srun and "
                     "without --communicator nccl");
  // Written after the measurement: found unwritable now, not minutes later.
  if (host.is_root() && !opts.profile_layers.empty()) check_can_write(opts.profile_layers, "--profile-layers");
  if (host.is_root() && !opts.json.empty()) check_can_write(opts.json, "--json", WriteMode::kAppend);

  model::Net net(benchmark_spec(opts.model, r.image_size, opts.classes), *be);
  net.init(opts.seed);  // the same seed everywhere: every rank starts from the same weights
  r.parameters = net.parameter_count();
  r.activation_bytes = benchmark_activation_bytes(net, opts.batch_size);
  model::Sgd sgd(net.params(), *be, 0.9);
  LossScaler scaler("", opts.precision);  // as train: dynamic loss scaling under fp16, off otherwise

  // This rank's fixed random batch: images N(0, 1) and labels, from (seed, rank).
  const int classes = benchmark_classes(net);
  std::mt19937_64 rng(opts.seed * 1000003ull + uint64_t(comm.rank()));
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> label(0, classes - 1);
  model::Tensor x(*be, {opts.batch_size, 3, r.image_size, r.image_size}), y(*be, {opts.batch_size, 1, 1, 1});
  {
    std::vector<float> hx(size_t(x.size())), hy(size_t(y.size()));
    for (auto& v : hx) v = normal(rng);
    for (auto& v : hy) v = float(label(rng));
    x.upload(hx.data());
    y.upload(hy.data());
  }
  model::Tensor d_out(*be, net.output_shape(opts.batch_size));
  std::optional<GradientBuckets> buckets;
  if (distributed)
    buckets.emplace(net.params(), size_t(opts.bucket_mb * 1024 * 1024), comm,
                    opts.fp16_allreduce ? Communicator::WireType::kFp16 : Communicator::WireType::kFp32);
  std::function<void(const std::vector<model::Param>&)> layer_done;
  if (distributed) layer_done = [&](const std::vector<model::Param>& ps) { buckets->ready(ps); };

  double nodes = comm.local_rank() == 0 ? 1 : 0;  // one local rank 0 per node
  host.allreduce_sum(&nodes, 1, "node count");
  r.nodes = int(nodes);

  const std::string unit = on_gpu ? "GPU" : "CPU";
  if (root) {
    out << "Model: " << opts.model << "\n"
        << "Batch size: " << opts.batch_size << "\n"
        << "Number of " << unit << "s: " << r.ranks << (r.nodes > 1 ? fmt::format(" on {} nodes", r.nodes) : "") << "\n"
        << fmt::format("Image size: {}x{}, {} parameters, activations and gradients {} per rank at batch {}\n",
                       r.image_size, r.image_size, r.parameters, human_bytes(r.activation_bytes), opts.batch_size)
        << "Device: " << r.device << " (" << r.backend << "), precision " << opts.precision << ", allreduce "
        << wire_dtype << (distributed ? " through " + comm.name() : std::string(" (one rank: none)")) << "\n";
    if (!net.blocked_summary().empty()) out << "Layout: " << net.blocked_summary() << "\n";
    out.flush();
  }

  int64_t steps = 0;
  // Each step's loss goes into the record without a wait; it is read after each iteration's
  // clock stops (on a GPU a read per step would drain the launch queue every step), for the
  // first step whose loss was not finite.
  model::LossAccumulator loss_record(*be);
  int64_t first_not_finite = -1;
  const auto read_loss = [&] {
    const auto rec = loss_record.read();
    if (first_not_finite < 0 && rec[1] >= 0) first_not_finite = int64_t(rec[1]);
    loss_record.reset();
  };
  auto step = [&] {
    if (distributed) buckets->begin(1.0f / float(comm.size()));
    const model::Tensor& logits = net.forward(x);
    d_out.reshape(logits.shape());
    benchmark_loss_accumulate(*be, logits, y, &d_out, steps + 1, loss_record.data());
    scaler.scale_loss_gradient(*be, d_out);
    net.backward(d_out, layer_done);
    if (distributed) buckets->finish("gradients of step " + std::to_string(steps));
    if (scaler.unscale_or_skip(*be, net.params())) sgd.step(0.01);
    ++steps;
    throw_if_stop_requested("benchmarking (step " + std::to_string(steps) + ")");
  };

  if (!opts.profile_layers.empty()) {
    write_benchmark_profile(opts, net, *be, x, [&](const model::Tensor& logits, model::Tensor& d) {
      benchmark_loss(*be, logits, y, &d);
    }, [&] { sgd.step(0.01); }, out);
    return r;
  }

  if (root) out << "Running warmup...\n" << std::flush;
  for (int i = 0; i < opts.warmup_batches; ++i) step();
  be->synchronize();
  read_loss();
  if (root) out << "Running benchmark...\n" << std::flush;
  for (int it = 0; it < opts.iters; ++it) {
    comm.barrier("start of iteration " + std::to_string(it));
    const auto t0 = Clock::now();
    for (int b = 0; b < opts.batches_per_iter; ++b) step();
    be->synchronize();
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    read_loss();  // after its clock
    // Each rank's rate; the iteration's figure is their mean (the reference prints rank 0's).
    double rate = double(opts.batch_size) * opts.batches_per_iter / secs;
    host.allreduce_sum(&rate, 1, "throughput of iteration " + std::to_string(it));
    rate /= double(comm.size());
    r.iter_img_per_s.push_back(rate);
    if (root) out << fmt::format("Iter #{}: {:.1f} img/sec per {}\n", it, rate, unit) << std::flush;
  }
  mean_ci95(r.iter_img_per_s, &r.mean, &r.ci95);
  r.total = r.mean * r.ranks;
  r.total_ci95 = r.ci95 * r.ranks;
  if (first_not_finite >= 0)
    spdlog::warn("the loss is not finite from step {} of {} on (the timing stands; the weights diverged)",
                 first_not_finite, steps);
  if (!root) return r;
  out << fmt::format("Img/sec per {}: {:.1f} +-{:.1f}\n", unit, r.mean, r.ci95)
      << fmt::format("Total img/sec on {} {}(s): {:.1f} +-{:.1f}\n", r.ranks, unit, r.total, r.total_ci95);
  double efficiency = 0;
  if (r.ranks == 1) {
    efficiency = 1;
  } else if (!opts.json.empty()) {
    int other_threads = 0;
    const double ref = one_rank_reference(opts.json, opts, r, &other_threads);
    if (ref > 0) {
      efficiency = r.total / (ref * r.ranks);
      out << fmt::format("Scaling efficiency: {:.0f}% against {:.1f} img/sec on 1 {} ({})\n", 100 * efficiency, ref,
                         unit, opts.json);
    } else if (other_threads > 0) {
      out << fmt::format("Scaling efficiency: the 1-rank line in {} ran {} thread(s), this run {} per rank: run the "
                         "1-rank benchmark with --threads {} for a reference that measures the ranks alone\n",
                         opts.json, other_threads, r.threads, r.threads);
    } else {
      out << "Scaling efficiency: no 1-rank line for this model, batch, image size, device and precision in "
          << opts.json << "\n";
    }
  }
  out << std::flush;
  if (!opts.json.empty()) {
    AppendFile f(opts.json, false);
    f.append(benchmark_json_line(opts, r, efficiency, wire_dtype) + "\n");
    f.close();
  }
  return r;
}

}  // namespace ds
