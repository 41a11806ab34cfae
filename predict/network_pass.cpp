#include "predict/network_pass.h"

#include <algorithm>
#include <cmath>

#include "io/error.h"
#include "io/stop_signal.h"
#include "model/math_mode.h"
#include "train/device_check.h"

namespace ds {

std::vector<float> run_network(model::Net& net, model::Backend& be, const StoreMeta& meta, size_t first, size_t n,
                               size_t total, int channels, const ReadSamples& read, int batch_size, Progress& progress,
                               int keep, const std::string& unit) {
  const size_t hw = size_t(meta.Hy()) * meta.Wy(), xs = size_t(meta.C()) * meta.H() * meta.W();
  const size_t kept = keep < 0 ? size_t(channels) : 1;
  std::vector<float> out(n * kept * hw);
  model::Tensor x(be, {1, 1, 1, 1});
  std::vector<float> host_x;
  for (size_t start = 0; start < n; start += batch_size) {
    throw_if_stop_requested(unit + " " + std::to_string(first + start) + " of " + std::to_string(total) +
                            "; nothing written");
    const size_t nb = std::min<size_t>(batch_size, n - start);
    host_x.resize(nb * xs);
    read(first + start, nb, host_x.data());
    x.reshape({static_cast<int>(nb), meta.C(), meta.H(), meta.W()});
    x.upload(host_x.data());
    const auto host = net.forward(x).to_host();
    for (size_t i = 0; i < nb * channels; ++i) {
      const size_t sample = start + i / channels, c = i % channels;
      if (keep >= 0 && c != size_t(keep)) continue;
      float* o = &out[(sample * kept + (keep < 0 ? c : 0)) * hw];
      for (size_t k = 0; k < hw; ++k) o[k] = meta.mask[k] ? host[i * hw + k] : NAN;
    }
    progress.advance(int64_t(nb));
  }
  return out;
}

size_t days_per_block(const Config& cfg, size_t hw) {
  const size_t bs = size_t(cfg.train.batch_size);
  const size_t fields = std::max(1, cfg.predict.members);
  const size_t want = cfg.predict.block_days > 0 ? size_t(cfg.predict.block_days)
                                                 : std::max<size_t>(1, (size_t(32) << 20) / (hw * sizeof(float) * fields));
  return std::max<size_t>(1, (want + bs - 1) / bs) * bs;
}

void check_device_forward(model::Net& net, model::Backend& be, const Config& cfg, const StoreMeta& meta, size_t n,
                          const ReadSamples& read) {
  const size_t bs = size_t(cfg.train.batch_size);
  std::vector<size_t> sizes{std::min(bs, n)};
  if (n % bs != 0 && n > bs) sizes.push_back(n % bs);
  for (const size_t nb : sizes) {
    std::vector<float> host(nb * size_t(meta.C()) * meta.H() * meta.W());
    read(0, nb, host.data());
    model::Tensor x(be, {int(nb), meta.C(), meta.H(), meta.W()});
    x.upload(host.data());
    const DeviceCheck c =
        check_forward_against_cpu(net, be, model::parse_math_mode(cfg.train.precision), x, cfg.run.threads);
    const std::string line = device_check_line(c, be.name(), cfg.train.precision) + " (batch of " + std::to_string(nb) + ")";
    if (!c.passed())
      throw Error(line + ". This backend computes the model wrongly here; nothing was written: report it with this "
                  "log; run.device: cpu predicts correctly, train.device_check: false predicts anyway");
    spdlog::info("{}", line);
  }
}

}  // namespace ds
