#include "train/rank_agreement.h"

#include <fmt/format.h>

#include <functional>
#include <vector>

#include "io/error.h"

namespace ds {

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
