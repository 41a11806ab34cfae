#include "train/batches.h"

#include <fmt/format.h>

#include <cmath>

#include "io/calendar.h"
#include "io/error.h"
#include "model/loss.h"

namespace ds {

void read_batch(const StoreReader& store, const std::string& split, const std::vector<size_t>& rows, Batch& batch) {
  const auto& m = store.meta();
  const int n = static_cast<int>(rows.size());
  const size_t xs = size_t(m.C()) * m.H() * m.W(), ys = size_t(m.Hy()) * m.Wy();
  std::vector<float> x(n * xs), y(n * ys);
  // Consecutive rows are read in one call: validation and prediction walk the store in order.
  for (int i = 0; i < n;) {
    int run = 1;
    while (i + run < n && rows[i + run] == rows[i] + run) ++run;
    store.read_x(split, rows[i], run, &x[i * xs]);
    store.read_y(split, rows[i], run, &y[i * ys]);
    i += run;
  }
  check_sane_rows(store, split, rows, x.data());
  batch.valid = model::count_valid_points(m.mask.data(), y.data(), n, int64_t(ys));
  batch.x.reshape({n, m.C(), m.H(), m.W()});
  batch.y.reshape({n, 1, m.Hy(), m.Wy()});
  batch.x.upload(x.data());
  batch.y.upload(y.data());
}

model::Tensor mask_tensor(const StoreMeta& meta, model::Backend& be) {
  model::Tensor t(be, {1, 1, meta.Hy(), meta.Wy()});
  std::vector<float> host(meta.mask.begin(), meta.mask.end());
  t.upload(host.data());
  return t;
}

}  // namespace ds
