#include "io/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace ds {

void setup_logging(const std::string& stage, const std::string& level, int rank) {
  spdlog::drop("downscale");  // set again once the rank is known (train under MPI)
  auto logger = spdlog::stderr_color_mt("downscale");
  std::string prefix = stage;
  if (rank >= 0) prefix += " rank " + std::to_string(rank);
  logger->set_pattern("[%H:%M:%S] [" + prefix + "] %^%v%$");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
}

Progress::Progress(std::string what, int64_t total, double interval_seconds)
    : what_(std::move(what)), total_(total), interval_(interval_seconds),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

void Progress::advance(int64_t n) {
  done_ += n;
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_).count() < interval_ || done_ >= total_) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double left = done_ > 0 ? elapsed * (total_ - done_) / done_ : 0;
  spdlog::info("{}: {}/{} ({:.0f}%), {:.0f} s left", what_, done_, total_, 100.0 * done_ / total_, left);
}

void Progress::done() {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  spdlog::info("{}: {}/{} done in {:.1f} s", what_, done_, total_, elapsed);
}

}  // namespace ds
