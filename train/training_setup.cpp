#include "train/training_setup.h"

#include <fmt/format.h>

namespace ds {

namespace {
const std::string kRate = ", learning rate ";
}

std::string latest_setup(const std::string& recorded) {
  const size_t p = recorded.rfind("; from epoch ");
  if (p == std::string::npos) return recorded;
  const size_t colon = recorded.find(": ", p);
  return colon == std::string::npos ? recorded : recorded.substr(colon + 2);
}

std::string setup_learning_rate(const std::string& setup) {
  const size_t p = setup.rfind(kRate);
  return p == std::string::npos ? std::string() : setup.substr(p + kRate.size());
}

std::string without_learning_rate(const std::string& setup) { return setup.substr(0, setup.rfind(kRate)); }

std::string setup_arithmetic(const std::string& setup) {
  const size_t seed = setup.rfind(", train.seed ");
  return seed != std::string::npos ? setup.substr(0, seed) : without_learning_rate(setup);
}

std::string learning_rate_text(double learning_rate, int ranks) {
  // As scaled_learning_rate after warmup: the rate itself on one rank, times the ranks on more.
  return fmt::format("{:g}", ranks > 1 ? learning_rate * (1.0 + double(ranks - 1)) : learning_rate);
}

std::string learning_rate_change(const std::string& checkpoint, const std::string& recorded_setup,
                                 const std::string& rate_now, double learning_rate, int ranks, int next_epoch) {
  const std::string before = setup_learning_rate(latest_setup(recorded_setup));
  if (before.empty() || before == rate_now) return "";
  return fmt::format("{} trained at a learning rate of {} (after warmup); this run goes on at {} "
                     "(train.learning_rate {:g} x {} rank(s)): Adam's steps change size from epoch {}. To keep the "
                     "earlier rate, set train.learning_rate so that it times the ranks gives it",
                     checkpoint, before, rate_now, learning_rate, ranks, next_epoch);
}

std::string seed_change(const std::string& checkpoint, const std::string& recorded_setup, uint64_t seed_now,
                        int next_epoch) {
  const std::string latest = latest_setup(recorded_setup);
  const std::string key = ", train.seed ";
  const size_t p = latest.rfind(key);
  if (p == std::string::npos) return "";
  const size_t from = p + key.size();
  const std::string before = latest.substr(from, latest.find(',', from) - from);
  if (before == std::to_string(seed_now)) return "";
  return fmt::format("{} was trained with train.seed {}; this run goes on with {}: from epoch {} on the dropout "
                     "masks (where the model has dropout) are drawn from the new seed, while the order of the days "
                     "goes on from the checkpoint's",
                     checkpoint, before, seed_now, next_epoch);
}

}  // namespace ds
