#include "io/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <memory>
#include <string_view>

#include "io/stop_signal.h"

namespace ds {

namespace {

// "warning: " before a warning's text: colours mark it on a terminal, but a Slurm .err file or a
// piped log has no colours, and there a warning looked like any other line.
class LevelTag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string_view tag = msg.level == spdlog::level::warn ? "warning: "
                                 : msg.level >= spdlog::level::err ? "error: "
                                                                   : "";
    dest.append(tag.data(), tag.data() + tag.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<LevelTag>(); }
};

}  // namespace

void setup_logging(const std::string& stage, const std::string& level, int rank) {
  spdlog::drop("downscale");  // set again once the rank is known (train under MPI)
  auto logger = spdlog::stderr_color_mt("downscale");
  std::string prefix = stage;
  if (rank >= 0) prefix += " rank " + std::to_string(rank);
  // The stop handler's line and main's last line name the rank too (io/stop_signal.h).
  set_stop_message_prefix(rank >= 0 ? "[" + prefix + "] " : "");
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  // The date too: a fetch or a training job runs for days, and its log is read after the fact.
  formatter->add_flag<LevelTag>('*').set_pattern("[%Y-%m-%d %H:%M:%S] [" + prefix + "] %^%*%v%$");
  logger->set_formatter(std::move(formatter));
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
  // Below 2 % done the rate is mostly start-up (the first box, the first batch): no estimate yet.
  if (done_ * 50 < total_) {
    spdlog::info("{}: {}/{} ({:.1f}%)", what_, done_, total_, 100.0 * done_ / total_);
    return;
  }
  const double left = elapsed * (total_ - done_) / done_;
  spdlog::info("{}: {}/{} ({:.0f}%), {:.0f} s left", what_, done_, total_, 100.0 * done_ / total_, left);
}

void Progress::done() {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  spdlog::info("{}: {}/{} done in {:.1f} s", what_, done_, total_, elapsed);
}

}  // namespace ds
