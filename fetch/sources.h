// The sources fetch opens and plans from: the dataset definition of the predictors and of the
// predictand (fetch.<key>.dataset, or a bare fetch.<key>.source), and the plan of their fields,
// retried like the chunks are.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "fetch/dataset.h"
#include "fetch/plan.h"
#include "io/config.h"
#include "io/netcdf_file.h"

namespace ds {

// One source's fields to plan.
struct SourceRequest {
  Dataset dataset;
  std::string url;  // the dataset's url or the config's source: the file, or the base of per-variable urls
  std::vector<FieldWanted> fields;
  // The grid preprocess regrids these fields onto (null: none, the box is cut as asked): fetch
  // widens the cut to its cells (plan_field).
  const GridSpec* regridded_onto = nullptr;
  // Where the chunks go, below the fetch folder (chunk_file). The predictand's have a folder of
  // their own: it may have a predictor's name (tas predicted from the model's tas), and the two
  // must not share chunk files or ledger entries.
  std::string chunk_folder = "chunks";
};

// The dataset definition fetch.<key>.dataset names (its url replaced by fetch.<key>.source when
// given: the server moved, or a local copy), or a pass-through definition of fetch.<key>.source
// alone; UsageError naming the key when neither gives a url.
Dataset dataset_of(const Config& cfg, const std::string& dataset, const std::string& source, const std::string& key);

// Opens the sources (each distinct URL once: `opened` keeps them across calls, so predictors and
// predictand in one file share it too) and plans the fields, retrying transient failures like
// the chunks do.
// A server that stops answering ends the fetch after fetch.timeout_s (RequestWatch).
// A dry run tries once: it is a check someone waits for, and a node without network would
// otherwise wait through every retry (8 doubling delays: over 20 minutes) to say so. For the same
// reason it waits for a request at most kDryRunWaitS (20 s), not fetch.timeout_s (300 s).
void plan_with_retries(const SourceRequest& s, const Config::Fetch& f, bool dry_run,
                       std::map<std::string, NcFile>& opened, FetchPlan& plan);

}  // namespace ds
