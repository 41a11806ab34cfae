#include "train/rank_device_check.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "io/error.h"
#include "model/math_mode.h"
#include "train/batches.h"
#include "train/device_check.h"

namespace ds {

void check_device_step(model::Net& net, model::Backend& be, const Config& cfg, const StoreReader& store,
                       const model::Tensor& mask, model::LossKind loss_kind, int threads, const LossScaler& scaler,
                       Communicator& comm, int64_t global_batch, bool check_here) {
  const auto& tc = cfg.train;
  const size_t n_train = store.count("train"), global = size_t(global_batch);
  const auto my_share = [&](size_t n) {
    const auto [lo, hi] = rank_slice(n, comm);
    return hi - lo;
  };
  // What to check: a step of each training batch size, and an inference forward of each
  // validation batch size (the validation loss: this rank's share in batches of batch_size) that no step
  // has checked (the forward's plans are the step's for the same size).
  struct Shape {
    const char* split;
    size_t n;
    bool step;
  };
  std::vector<Shape> todo{{"train", my_share(std::min(n_train, global)), true}};
  const size_t last = my_share(n_train - (n_train - 1) / global * global);
  if (last != todo[0].n) todo.push_back({"train", last, true});
  const size_t bs = size_t(tc.batch_size), val_share = my_share(store.count("validation"));
  for (const size_t v : {std::min(val_share, bs), val_share % bs})
    if (std::none_of(todo.begin(), todo.end(), [&](const Shape& t) { return t.n == v; }))
      todo.push_back({"validation", v, false});
  const model::MathMode mode = model::parse_math_mode(tc.precision);
  bool passed = true;
  std::vector<std::string> lines;
  for (const Shape& t : todo) {
    if (t.n == 0 || !check_here) continue;
    Batch batch{model::Tensor(be, {1, 1, 1, 1}), model::Tensor(be, {1, 1, 1, 1})};
    std::vector<size_t> rows(t.n);
    std::iota(rows.begin(), rows.end(), size_t(0));
    read_batch(store, t.split, rows, batch);
    const DeviceCheck c = t.step ? check_step_against_cpu(net, be, mode, batch, mask, loss_kind, threads, tc.seed,
                                                          scaler.enabled() ? float(scaler.scale()) : 1.0f)
                                 : check_forward_against_cpu(net, be, mode, batch.x, threads);
    lines.push_back(device_check_line(c, be.name(), tc.precision) + " (" + (t.step ? "" : "validation ") +
                    "batch of " + std::to_string(t.n) + ")");
    if (!c.passed()) {
      passed = false;
      break;
    }
  }
  if (!passed) spdlog::error("{} (rank {})", lines.back(), comm.rank());
  double failed = passed ? 0 : 1;
  comm.allreduce_sum(&failed, 1, "device check");
  if (!passed)
    throw Error(lines.back() + " (rank " + std::to_string(comm.rank()) + "). This backend computes the model wrongly " +
                "here: report it with this log; run.device: cpu trains correctly, train.device_check: false trains anyway");
  if (failed > 0)
    throw Error("device check failed on " + std::to_string(int(failed)) + " rank(s) (their lines above name the " +
                "tensor); rank " + std::to_string(comm.rank()) +
                (lines.empty() ? std::string(" did not check") : " passed: " + lines.front()));
  if (comm.is_root())
    for (const std::string& l : lines) spdlog::info("{}", l);
}

}  // namespace ds
