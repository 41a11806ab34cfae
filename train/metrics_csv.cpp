#include "train/metrics_csv.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

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

// metrics.csv's text as restore_metrics leaves it (from `original`), the line it puts back ("" when
// none), and what else it changed ("" when nothing), for a warning.
struct Restored {
  std::string text, line, changed;
};
Restored restored_metrics(const std::string& original, int checkpoint_epoch, const std::string& checkpoint_line) {
  Restored r;
  const bool have_line = parse_metrics_line(checkpoint_line).epoch == checkpoint_epoch;
  // The complete lines: a last one without its newline was cut off by the failed write. The file
  // is appended to, so an epoch written again (a history resumed from an older checkpoint) begins
  // the current history there: the earlier lines from that epoch on go. A line of an epoch after
  // the checkpoint's is another history's (an older checkpoint_last.h5 put back, epochs trained
  // since and now trained again); the checkpoint's own epoch is as the checkpoint recorded it (an
  // edited loss stayed).
  std::vector<std::pair<int, std::string>> lines;  // (epoch, line), epoch 0 for the header
  std::vector<int> dropped;
  bool replaced = false;
  for (size_t at = 0, nl; (nl = original.find('\n', at)) != std::string::npos; at = nl + 1) {
    std::string line = original.substr(at, nl - at);
    const int epoch = parse_metrics_line(line).epoch;
    if (epoch == 0 && !lines.empty()) continue;  // the header is the first line; a blank or stray one goes
    if (epoch > 0)
      while (!lines.empty() && lines.back().first >= epoch) dropped.push_back(lines.back().first), lines.pop_back();
    lines.emplace_back(epoch, std::move(line));
  }
  int last = 0;
  for (auto& [epoch, line] : lines) {
    if (epoch > checkpoint_epoch) {
      dropped.push_back(epoch);
      continue;
    }
    if (epoch == checkpoint_epoch && have_line && line != checkpoint_line) line = checkpoint_line, replaced = true;
    r.text += line + "\n";
    if (epoch > 0) last = epoch;
  }
  std::sort(dropped.begin(), dropped.end());
  std::string dropped_text;
  for (int e : dropped) dropped_text += (dropped_text.empty() ? "" : ", ") + std::to_string(e);
  if (last == checkpoint_epoch - 1 && have_line) {
    r.line = checkpoint_line;
    if (r.text.empty()) r.text = std::string(kMetricsHeader) + "\n";
    r.text += checkpoint_line + "\n";
  }
  if (!dropped.empty())
    r.changed = "lines of epochs " + dropped_text + " dropped (after the checkpoint's epoch " +
                std::to_string(checkpoint_epoch) + ", or written over by a later line of their epoch)";
  if (replaced)
    r.changed += std::string(r.changed.empty() ? "" : "; ") + "epoch " + std::to_string(checkpoint_epoch) +
                 "'s line replaced by the checkpoint's record of it";
  return r;
}

}  // namespace

std::string restore_metrics(const std::string& path, int checkpoint_epoch, const std::string& checkpoint_line) {
  if (!path_exists(path)) return "";
  const std::string original = read_file(path);  // unreadable: an error, not a history begun anew
  const Restored r = restored_metrics(original, checkpoint_epoch, checkpoint_line);
  if (r.text != original) write_file_atomically(path, r.text);
  if (!r.changed.empty())
    spdlog::warn("{}: {}: it did not agree with the checkpoint the run resumes from", path, r.changed);
  return r.line;
}

std::string metrics_to_restore(const std::string& path, int checkpoint_epoch, const std::string& checkpoint_line) {
  if (!path_exists(path)) return "";
  return restored_metrics(read_file(path), checkpoint_epoch, checkpoint_line).line;
}

}  // namespace ds
