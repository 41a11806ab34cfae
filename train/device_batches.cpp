#include "train/device_batches.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>

#include "model/loss.h"

namespace ds {

namespace {
constexpr size_t kChunkRows = 256;  // rows per store read while loading: ~60 MB for North America
constexpr double kShare = 0.5;      // of the free memory, for auto: activations and workspaces need the rest
}  // namespace

DeviceSplit::DeviceSplit(const StoreReader& store, const std::string& split, model::Backend& be, bool log)
    : be_(be) {
  const auto& m = store.meta();
  C_ = m.C(), H_ = m.H(), W_ = m.W(), Hy_ = m.Hy(), Wy_ = m.Wy();
  const size_t n = store.count(split);
  const size_t xs = size_t(C_) * H_ * W_, ys = size_t(Hy_) * Wy_;
  x_ = model::Tensor(be, {int(n), C_, H_, W_});
  y_ = model::Tensor(be, {int(n), 1, Hy_, Wy_});
  valid_.resize(n);
  std::vector<float> x(kChunkRows * xs), y(kChunkRows * ys);
  size_t next_report = n / 10;
  for (size_t row = 0; row < n; row += kChunkRows) {
    const size_t k = std::min(kChunkRows, n - row);
    store.read_x(split, row, k, x.data());
    store.read_y(split, row, k, y.data());
    std::vector<size_t> rows(k);
    std::iota(rows.begin(), rows.end(), row);
    check_sane_rows(store, split, rows, x.data());
    for (size_t r = 0; r < k; ++r)
      valid_[row + r] = model::count_valid_points(m.mask.data(), &y[r * ys], 1, int64_t(ys));
    be.copy_from_host(x_.data() + row * xs, x.data(), int64_t(k * xs));
    be.copy_from_host(y_.data() + row * ys, y.data(), int64_t(k * ys));
    if (log && n >= 10 * kChunkRows && row + k >= next_report && row + k < n) {
      spdlog::info("loading the {} split into backend memory: {} of {} samples", split, row + k, n);
      next_report += n / 10;
    }
  }
}

void DeviceSplit::gather(const std::vector<size_t>& rows, const float* index, Batch& batch) const {
  const int n = int(rows.size());
  batch.x.reshape({n, C_, H_, W_});
  batch.y.reshape({n, 1, Hy_, Wy_});
  be_.gather_rows(n, int64_t(C_) * H_ * W_, index, x_.data(), batch.x.data());
  be_.gather_rows(n, int64_t(Hy_) * Wy_, index, y_.data(), batch.y.data());
  batch.valid = 0;
  for (size_t r : rows) batch.valid += valid_[r];
}

void DeviceSplit::slice(size_t row0, size_t n, Batch& batch) const {
  const int64_t xs = int64_t(C_) * H_ * W_, ys = int64_t(Hy_) * Wy_;
  batch.x.reshape({int(n), C_, H_, W_});
  batch.y.reshape({int(n), 1, Hy_, Wy_});
  be_.copy(batch.x.data(), x_.data() + int64_t(row0) * xs, int64_t(n) * xs);
  be_.copy(batch.y.data(), y_.data() + int64_t(row0) * ys, int64_t(n) * ys);
  batch.valid = std::accumulate(valid_.begin() + row0, valid_.begin() + row0 + n, int64_t(0));
}

int64_t split_bytes(const StoreMeta& m, size_t rows) {
  return int64_t(rows) * (int64_t(m.C()) * m.H() * m.W() + int64_t(m.Hy()) * m.Wy()) * int64_t(sizeof(float));
}

bool choose_data_on_device(const std::string& setting, int64_t bytes, model::Backend& be, int sharing, bool log) {
  const double gb = double(bytes) / 1e9;
  if (setting == "false") {
    if (log) spdlog::info("batches read from the store each step (train.data_on_device: false)");
    return false;
  }
  if (setting == "true") {
    if (log) spdlog::info("training data in {} memory: {:.2f} GB (train.data_on_device: true)", be.name(), gb);
    return true;
  }
  const bool gpu = be.name().rfind("cuda", 0) == 0;
  const int64_t free = be.free_bytes();
  const double budget = free < 0 ? 0 : kShare * double(free) / double(gpu ? 1 : std::max(1, sharing));
  const bool fits = free >= 0 && double(bytes) <= budget;
  if (log)
    spdlog::info("{} (train.data_on_device: auto): the train and validation splits take {:.2f} GB, {} {:.2f} GB "
                 "(half the free {} memory{})",
                 fits ? fmt::format("training data in {} memory", be.name())
                      : std::string("batches read from the store each step"),
                 gb, fits ? "within" : "more than", budget / 1e9, gpu ? "GPU" : "host",
                 gpu || sharing <= 1 ? "" : fmt::format(" over {} ranks on this node", sharing));
  return fits;
}

}  // namespace ds
