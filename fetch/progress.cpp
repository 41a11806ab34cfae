#include "fetch/progress.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace ds {

TransferProgress::TransferProgress(uint64_t total_bytes, size_t chunks, double log_interval_s)
    : total_(total_bytes), chunks_(chunks), interval_(log_interval_s), tty_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

std::string TransferProgress::human(double bytes) {
  const char* unit[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) bytes /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, unit[u]);
  return buf;
}

void TransferProgress::add_bytes(int64_t n) {
  done_bytes_ += n;
  draw(false);
}

void TransferProgress::chunk_done() {
  ++done_chunks_;
  draw(false);
}

void TransferProgress::clear_line() {
  if (tty_) std::fprintf(stderr, "\r\033[K");
}

void TransferProgress::draw(bool force) {
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_).count();
  if (!force && since < (tty_ ? 0.2 : interval_)) return;
  last_ = now;
  const double elapsed = std::max(1e-3, std::chrono::duration<double>(now - start_).count());
  const double done = static_cast<double>(std::max<int64_t>(0, done_bytes_));
  const double share = total_ > 0 ? std::min(1.0, done / static_cast<double>(total_)) : 1.0;
  const double rate = done / elapsed;
  const double left = rate > 0 ? (static_cast<double>(total_) - done) / rate : 0;
  char tail[160];
  std::snprintf(tail, sizeof tail, "%s / %s, %s/s, %.0f s left, chunks %zu/%zu", human(done).c_str(),
                human(static_cast<double>(total_)).c_str(), human(rate).c_str(), std::max(0.0, left), done_chunks_,
                chunks_);
  if (tty_) {
    const int width = 30, fill = static_cast<int>(share * width);
    std::fprintf(stderr, "\r\033[Kfetch [%s%s] %3.0f%% %s", std::string(fill, '#').c_str(),
                 std::string(width - fill, '.').c_str(), 100 * share, tail);
    std::fflush(stderr);
  } else {
    spdlog::info("fetch: {:.0f}% {}", 100 * share, tail);
  }
}

void TransferProgress::finish() {
  draw(true);
  if (tty_) std::fprintf(stderr, "\n");
}

}  // namespace ds
