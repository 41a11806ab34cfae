// `downscale preprocess`: from the files `fetch` wrote to the HDF5 training store.
//   predictors -> regridded onto the model grid (bilinear, conservative or nearest, per field)
//              -> standardized with training-year statistics (per grid box or per field)
//   predictand -> (precipitation: mm/day) -> regridded onto preprocess.predictand_grid, or as
//                 fetched -> placed in the model's output grid (preprocess/output_grid.h)
//              -> land mask (observed on min_valid_fraction of the training days) and target
//                 (preprocess/target.h)
//   all -> one calendar -> common dates -> split by (season-)years -> one store (io/training_store.h)
// Streaming, so memory is bounded by a block of days, not by the record's length:
//   pass 1 reads each predictor's training days block by block and accumulates its statistics
//          (preprocess/standardize.h: RunningStats), and the predictand's training days for the
//          land mask;
//   pass 2 reads every field block by block again, standardizes, and writes the block's samples
//          into the chunked datasets.
#pragma once
#include <string>

#include "io/config.h"

namespace ds {

struct StoreSummary {
  size_t train = 0, validation = 0, test = 0, dropped_dates = 0;
  size_t not_common = 0, outside_splits = 0;  // the two kinds of dropped dates
  size_t filled = 0;                          // predictor values missing and filled (preprocess.fill)
  double land_share = 0;                      // modelled share of the observation grid's boxes
  double wet_day_share = 0;                   // of the training target (precipitation only)
  bool precipitation = false;                 // the predictand is pr
  std::string splits;                         // the split years, and whether they are season-years
};

// Reads <fetch_dir>/manifest.json and writes `store_path` atomically.
StoreSummary build_store(const Config& cfg, const std::string& fetch_dir, const std::string& store_path);

}  // namespace ds
