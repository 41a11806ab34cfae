// PNG figures of an evaluation, drawn with cairo: a map per field (observed mean, predicted
// mean, bias, ROCSS) on the predictand grid with north up and a colour bar, and the table of
// domain scores as an image.
#pragma once
#include <string>
#include <vector>

#include "evaluate/scores.h"

namespace ds {

struct MapField {
  std::string title, units;
  std::vector<double> lon, lat;  // ascending cell centres
  std::vector<double> values;    // (lat, lon); NaN: drawn grey (ocean, undefined)
  bool diverging = false;        // centred on 0 with a blue-white-red scale
};

// Written atomically.
void write_map_png(const std::string& path, const MapField& f);
void write_table_png(const std::string& path, const Evaluation& e, const std::string& title);

// Any table of domain scores: one row per method, one column per score.
struct TableRow {
  std::string name;
  std::vector<double> values;  // one per column; NaN shown as "-"
};
void write_table_png(const std::string& path, const std::string& title, const std::vector<std::string>& columns,
                     const std::vector<TableRow>& rows, const std::string& footer);

}  // namespace ds
