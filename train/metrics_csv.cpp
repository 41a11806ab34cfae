#include "train/metrics_csv.h"

#include <sstream>
#include <utility>

#include "io/atomic_file.h"
#include "io/read_file.h"

namespace ds {

std::string metrics_line(const EpochMetrics& m) {
  std::ostringstream line;
  const auto field = [&](double v) {
    line << ",";
    if (std::isfinite(v)) line << v;
  };
  line << m.epoch;
  field(m.train_loss);
  field(m.val_loss);
  field(m.seconds);
  field(m.samples_per_second);
  return line.str();
}

EpochMetrics parse_metrics_line(const std::string& line) {
  EpochMetrics m;
  std::istringstream in(line);
  std::string f[5];
  for (auto& x : f) std::getline(in, x, ',');
  const auto number = [](const std::string& s) {
    try {
      size_t used = 0;
      const double v = std::stod(s, &used);
      return used == s.size() ? v : NAN;
    } catch (const std::exception&) {
      return double(NAN);
    }
  };
  const double epoch = number(f[0]);
  if (!(epoch >= 1) || epoch != std::floor(epoch)) return m;  // the header, or no line of ours
  m.epoch = int(epoch);
  m.train_loss = number(f[1]), m.val_loss = number(f[2]), m.seconds = number(f[3]), m.samples_per_second = number(f[4]);
  return m;
}

namespace {

// metrics.csv's text as restore_metrics leaves it (from `original`), and the line it puts back
// ("" when none).
std::pair<std::string, std::string> restored_metrics(const std::string& original, int checkpoint_epoch,
                                                     const std::string& checkpoint_line) {
  // The complete lines: a last one without its newline was cut off by the failed write.
  std::string text;
  int last = 0;
  for (size_t at = 0, nl; (nl = original.find('\n', at)) != std::string::npos; at = nl + 1) {
    const std::string line = original.substr(at, nl - at);
    text += line + "\n";
    last = parse_metrics_line(line).epoch;
  }
  std::string restored;
  if (last == checkpoint_epoch - 1 && parse_metrics_line(checkpoint_line).epoch == checkpoint_epoch) {
    restored = checkpoint_line;
    if (text.empty()) text = std::string(kMetricsHeader) + "\n";
    text += checkpoint_line + "\n";
  }
  return {text, restored};
}

}  // namespace

std::string restore_metrics(const std::string& path, int checkpoint_epoch, const std::string& checkpoint_line) {
  if (!path_exists(path)) return "";
  const std::string original = read_file(path);  // unreadable: an error, not a history begun anew
  const auto [text, restored] = restored_metrics(original, checkpoint_epoch, checkpoint_line);
  if (text != original) write_file_atomically(path, text);
  return restored;
}

std::string metrics_to_restore(const std::string& path, int checkpoint_epoch, const std::string& checkpoint_line) {
  if (!path_exists(path)) return "";
  return restored_metrics(read_file(path), checkpoint_epoch, checkpoint_line).second;
}

}  // namespace ds
