#include "pipeline/stages.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "io/suggest.h"

namespace ds {

std::string RunPaths::other_models_hint(const std::string& stage, const std::string& file,
                                        const std::string& what) const {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(root) / stage;
  std::vector<std::string> names;  // "": the unnamed model, whose folder is <stage>/ itself
  std::error_code ec;
  if (!name.empty() && fs::exists(dir / file, ec)) names.push_back("");
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n != name && it->is_directory(ec) && fs::exists(it->path() / file, ec)) names.push_back(n);
  }
  if (names.empty()) return "";
  std::sort(names.begin(), names.end());
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + (n.empty() ? "train.name unset" : n);
  // The name offered: the one nearest a mistyped train.name (deepsed: deepesd), else the last.
  std::string offer = names.back();
  if (!name.empty()) {
    std::vector<std::string> named;
    for (const std::string& n : names)
      if (!n.empty()) named.push_back(n);
    const std::string near = closest_name(name, named);
    if (!near.empty()) offer = near;
  }
  return "; " + what + " here: " + list +
         (offer.empty() ? " (run without train.name)" : " (--set train.name=" + offer + ")");
}

}  // namespace ds
