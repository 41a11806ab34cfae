// `downscale preprocess`: from the files `fetch` wrote to the HDF5 training store.
//   predictors -> bilinear onto the model grid -> standardized with training-year statistics
//   predictand -> mm/day -> bilinear onto the output grid -> land mask and wet-day target
//   all -> common dates -> split by years -> one store (io/training_store.h)
#pragma once
#include <string>

#include "io/config.h"

namespace ds {

struct StoreSummary {
  size_t train = 0, validation = 0, test = 0, dropped_dates = 0;
  double land_share = 0, wet_day_share = 0;  // of the training target
};

// Reads <fetch_dir>/manifest.json and writes `store_path` atomically.
StoreSummary build_store(const Config& cfg, const std::string& fetch_dir, const std::string& store_path);

}  // namespace ds
