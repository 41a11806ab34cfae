// Predictors from another fetch (a GCM run, a later period) prepared exactly as the training
// store's inputs were: each channel regridded onto the model grid by the method the store
// records, missing values handled by the store's fill policy, and standardized with the store's
// training statistics, never with statistics of the new data. `predict` reads them in blocks of
// days, so memory stays bounded by a block whatever the length of the run.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/training_store.h"

namespace ds {

class FetchedField;
class Regridder;

class NewPredictors {
 public:
  // Reads <fetch_dir>/manifest.json; every channel of the store must be there, by name
  // ("z@500"). Units agree by construction: fetch converts every field to its dataset's
  // standard units. Throws InputError naming what is missing.
  NewPredictors(const std::string& fetch_dir, const StoreMeta& meta);
  ~NewPredictors();

  // The days present in every channel, ascending (days since 1970-01-01).
  const std::vector<int64_t>& days() const { return days_; }
  // Standardized samples [first, first + n) of days(): n x C x H x W floats into x.
  void read(size_t first, size_t n, float* x) const;

 private:
  struct Channel;
  std::vector<Channel> channels_;
  std::vector<int64_t> days_;
  const StoreMeta& meta_;
  int fill_;
};

}  // namespace ds
