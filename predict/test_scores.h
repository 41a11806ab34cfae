// predict's first score of the store's test split: the prediction pooled against the
// observations and each box's training mean (evaluate's climatology baseline), a block of days at
// a time, then predict/scores.json and one log line.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/training_store.h"

namespace ds {

// Sums of squared errors and means over every observed (day, modelled box) value so far.
struct TestScore {
  double se_model = 0, se_clim = 0, sum_obs = 0, sum_pred = 0;
  size_t count = 0;
};

// Adds days [first, first + n) of a prediction (pred: (n, H' x W')) against the observations and
// each box's training mean (evaluate's climatology baseline; clim: H' x W') over the modelled
// boxes, skipping days not observed.
void add_test_scores(const StoreReader& store, const std::vector<float>& clim, size_t first, size_t n,
                     const std::vector<float>& pred, TestScore& s);

// predict/scores.json and the log line of the test split's pooled scores. Precipitation's keys
// carry their units ("rmse_mm_day"; key_units "_mm_day"), any other predictand's name them in
// "units"; `extra` adds the keys only one of them has.
void report_test_scores(const std::string& store_path, const std::string& predict_dir, const TestScore& s, size_t n,
                        const std::string& ckpt, const std::string& what, const std::string& units, const std::string& key_units,
                        const nlohmann::json& extra);

}  // namespace ds
