#include "train/rank_agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <sstream>
#include <vector>

#include "io/error.h"

namespace ds {
namespace {

// The first line where `a` and `b` differ, quoted, as "'x' against 'y'" ("(none)" past an end).
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (;;) {
    const bool more_a = bool(std::getline(sa, la)), more_b = bool(std::getline(sb, lb));
    if (!more_a) la = "(none)";
    if (!more_b) lb = "(none)";
    if (la != lb || !more_a || !more_b) return fmt::format("'{}' against rank 0's '{}'", la, lb);
  }
}

}  // namespace

void check_ranks_read_alike(Communicator& comm, const std::string& store_path, const std::string& store_fingerprint,
                            const std::string& config_file, const std::string& config_record) {
  if (comm.size() == 1) return;
  // The text as it reads: a per-node copy with CRLF line ends, or without the last newline, is
  // the same config.
  std::string text = config_record;
  text.erase(std::remove(text.begin(), text.end(), '\r'), text.end());
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const std::vector<std::string> all = comm.gather(store_fingerprint + "\n" + config_file + "\n" + text, 0);
  if (!comm.is_root()) return;  // rank 0's error ends the job
  const auto split = [](const std::string& s) {
    const size_t a = s.find('\n'), b = s.find('\n', a + 1);
    return std::array<std::string, 3>{s.substr(0, a), s.substr(a + 1, b - a - 1), s.substr(b + 1)};
  };
  const auto root = split(all[0]);
  for (size_t r = 1; r < all.size(); ++r) {
    const auto rank = split(all[r]);
    if (rank[0] != root[0])
      throw InputError(fmt::format("{}: rank {} opened a store with other {} than rank 0's: every rank must read the "
                                   "same store (put it on a shared file system, and give every rank the same "
                                   "working folder and run.dir)",
                                   store_path, r,
                                   rank[0].substr(0, 64) != root[0].substr(0, 64) ? "metadata (store identity)"
                                                                                  : "data (content_hash)"));
    if (rank[2] != root[2])
      throw InputError(fmt::format("{}: rank {} read another config than rank 0 ({}; first difference: {}): every "
                                   "rank must train the same model the same way (give every rank the same --config "
                                   "and --set options)",
                                   root[1], r, rank[1] == root[1] ? "the same path" : "its file is " + rank[1],
                                   first_difference(rank[2], root[2])));
  }
}

void check_ranks_start_alike(Communicator& comm, bool resume, const TrainState& state, int64_t optimizer_steps,
                             const std::string& checkpoint) {
  if (comm.size() == 1) return;
  // What a user reads (the first line), then everything else that decides the steps to come.
  const std::string said =
      !resume ? std::string("starts afresh (no checkpoint to resume from)")
      : state.step_in_epoch > 0
          ? fmt::format("resumes at epoch {} step {} from its checkpoint", state.epoch + 1, state.step_in_epoch)
          : fmt::format("resumes after epoch {} from its checkpoint", state.epoch);
  const std::string rest =
      fmt::format("{} {:a} {} {:a} {} {:a} {:016x} {}", optimizer_steps, state.best_val_loss,
                  state.epochs_without_improvement, state.loss_scale, state.loss_scale_good_steps, state.epoch_loss_sum,
                  std::hash<std::string>{}(state.rng_state), state.run_id);
  const std::vector<std::string> all = comm.gather(said + "\n" + rest, 0);
  if (!comm.is_root()) return;  // rank 0's error ends the job
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    const auto first_line = [](const std::string& s) { return s.substr(0, s.find('\n')); };
    const std::string how =
        first_line(all[r]) != first_line(all[0])
            ? fmt::format("rank {} {}, but rank 0 {}", r, first_line(all[r]), first_line(all[0]))
            : fmt::format("rank {} read another training state than rank 0 (both {}; the shuffle, optimizer steps, "
                          "best loss or run differ)", r, first_line(all[0]));
    throw InputError(fmt::format("{}: {}: every rank must start from the same checkpoint (give every rank the same "
                                 "working folder and run.dir, on a file system they share)",
                                 checkpoint, how));
  }
}

}  // namespace ds
