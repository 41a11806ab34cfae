// A checkpoint's `setup`: what decided a training session's arithmetic and steps, as
// "<ranks> rank(s), backend <name>, train.precision <p>, train.seed <s>, learning rate <lr>", each
// resumed session on another setup appended as "; from epoch N: <setup>" (train/trainer.cpp
// writes it). train --resume and train --check --resume read the last session's part alike.
#pragma once

#include <cstdint>
#include <string>

namespace ds {

// The last session's part of a recorded setup ("" for an empty one).
std::string latest_setup(const std::string& recorded);

// A setup's learning rate text after ", learning rate " ("" for a version that did not record it).
std::string setup_learning_rate(const std::string& setup);

// A setup without its learning rate (versions before the rate was recorded compare the rest).
std::string without_learning_rate(const std::string& setup);

// What decides the order of the sums: ranks, backend (with its threads) and precision; not the
// seed or the rate after them.
std::string setup_arithmetic(const std::string& setup);

// The learning rate after warmup (Horovod's rule: train.learning_rate x ranks) as the setup
// records it: "{:g}" of that product.
std::string learning_rate_text(double learning_rate, int ranks);

// The line that says a resume goes on at another learning rate than the checkpoint's last
// session trained at; "" when the rate is the same or was not recorded.
std::string learning_rate_change(const std::string& checkpoint, const std::string& recorded_setup,
                                 const std::string& rate_now, double learning_rate, int ranks, int next_epoch);

// The line that says a resume goes on under another train.seed than the checkpoint's last
// session; "" when the seed is the same or was not recorded. The seed then decides the dropout
// masks from the next epoch on; the order of the days goes on from the checkpoint's generator.
std::string seed_change(const std::string& checkpoint, const std::string& recorded_setup, uint64_t seed_now,
                        int next_epoch);

}  // namespace ds
