// What makes a training store the one a model was trained on: its channels (names and order),
// grids, standardization statistics, mask and predictand. Their SHA-256 is the store's `identity`
// attribute; a checkpoint records it with the parts a message needs to say what differs, and
// train --resume, predict and evaluate refuse a store whose identity is another.
// The samples themselves are not part of the identity (new predictors standardized with the
// store's statistics are predicted with its model); their hash is the store's `content_hash`.
#pragma once
#include <string>
#include <vector>

#include "io/training_store.h"

namespace ds {

struct StoreProvenance {
  std::string identity;               // store_identity(meta); empty: not recorded (an older checkpoint)
  std::vector<std::string> channels;  // in the order the model takes them
  int grid[4] = {0, 0, 0, 0};         // predictor H, W, predictand H', W'
  std::string statistics;             // statistics_hash(meta)
  // The train and validation splits' content hashes (StoreReader::split_hash): not part of the
  // identity (new predictors are predicted with the store's model whatever its splits), but a
  // model trained on other training days, another wet threshold or another validation split (the
  // days that chose its best epoch) is not this store's. "": not recorded.
  std::string train_hash, validation_hash;
  std::string grid_text() const;      // "H x W -> H' x W'"
};

std::string store_identity(const StoreMeta& meta);
// The identity's parts, each hashed on its own ("channels=1f2e...,grids=...,statistics=...,mask=...,
// predictand=...,calendar=...,window=..."): the store's `identity_parts` attribute, so that a
// store edited after preprocess is refused naming what was changed.
std::string identity_parts(const StoreMeta& meta);
// The names of the parts whose hash differs between two identity_parts texts ("calendar").
std::vector<std::string> changed_identity_parts(const std::string& recorded, const std::string& now);
std::string statistics_hash(const StoreMeta& meta);  // of /stats/mean and /stats/sd
StoreProvenance provenance_of(const StoreMeta& meta);
StoreProvenance provenance_of(const StoreReader& store);  // with the split hashes

// "" when `a` and `b` are the same store's; else what differs, most telling first: channels in
// another order, other channels, other grid sizes, other statistics, other coordinates/mask.
std::string provenance_difference(const StoreProvenance& a, const StoreProvenance& b);

std::string join_commas(const std::vector<std::string>& v);
std::vector<std::string> split_commas(const std::string& s);

}  // namespace ds
