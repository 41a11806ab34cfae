// Driver of `downscale train --predict-scaling`: the scaling model's table (train/scaling_model.h)
// from a layer profile, given (--profile) or measured here on the configured device and model with
// the store's first batch. Trains nothing and writes nothing but --out.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "io/atomic_file.h"
#include "io/error.h"
#include "model/math_mode.h"
#include "model/net.h"
#include "pipeline/stages.h"
#include "train/batches.h"
#include "train/check.h"
#include "train/distributed.h"
#include "train/layer_profile.h"
#include "train/scaling_model.h"

namespace ds {

namespace {

LayerProfile measure_here(const Config& cfg, int steps) {
  const RunPaths paths = RunPaths::of(cfg);
  StoreReader store(paths.store());
  const StoreMeta& meta = store.meta();
  const size_t n = std::min<size_t>(store.count("train"), size_t(cfg.train.batch_size));
  if (n == 0) throw InputError(paths.store() + ": the train split is empty (the profile needs one batch)");
  const auto single = make_single_process_communicator();
  const CpuThreads threads = cpu_threads(*single, cfg.run.threads, "run.threads");
  auto be = model::make_backend(cfg.run.device, threads.threads, 0, "run.device", cfg.origin("run.device"));
  model::apply_math_mode(*be, cfg.train.precision, true);
  model::Net net(model_spec_for(cfg, meta), *be);
  net.init(cfg.train.seed);
  Batch batch{model::Tensor(*be, {1, 1, 1, 1}), model::Tensor(*be, {1, 1, 1, 1})};
  std::vector<size_t> rows(n);
  std::iota(rows.begin(), rows.end(), 0);
  read_batch(store, "train", rows, batch);
  const model::Tensor mask = mask_tensor(meta, *be);
  spdlog::info("measuring the layer profile: model {}, batch {}, backend {}, {} steps", net.spec().name, n,
               be->name(), steps);
  return measure_layer_profile(net, *be, model::parse_loss(cfg.train.loss, cfg.file + ": key 'train.loss'"),
                               batch.x, batch.y, mask, 2, steps, cfg.train.precision);
}

}  // namespace

int run_predict_scaling(const Config& cfg, const ScalingRequest& req) {
  ScalingOptions opt;
  if (req.busbw_gbs > 0) {
    opt.intra = Link{"measured", "--busbw " + std::to_string(req.busbw_gbs) + " GB/s", req.latency_us * 1e-6,
                     req.busbw_gbs * 1e9, "given on the command line (--busbw, --latency-us)", true};
  } else {
    opt.intra = find_link(req.link, "--link", false);
  }
  opt.inter = find_link(req.network, "--network", true);
  opt.nic_per_gpu = req.nic == "per-gpu";
  opt.gpus_per_node = req.gpus_per_node;
  opt.bucket_bytes = size_t(cfg.train.allreduce_bucket_mb * 1024 * 1024);
  // What the training would send: the config's unless the command line says otherwise.
  opt.allreduce_dtype = req.allreduce_dtype.empty() ? cfg.train.allreduce_dtype : req.allreduce_dtype;
  if (!req.out.empty()) check_can_write(req.out, "--out");  // before the measurement, not after it
  const LayerProfile profile = req.profile.empty() ? measure_here(cfg, req.steps) : LayerProfile::load(req.profile);
  const auto rows = predict_scaling(profile, opt);
  std::fputs(scaling_report(profile, opt, rows, req.profile.empty() ? "measured now" : req.profile).c_str(), stdout);
  if (!req.out.empty()) write_file_atomically(req.out, scaling_json(profile, opt, rows));
  return 0;
}

}  // namespace ds
