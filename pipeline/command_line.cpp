#include "pipeline/command_line.h"

#include <algorithm>

#include "io/suggest.h"

namespace ds {

namespace {
bool takes_value(const std::string& a) { return a == "-c" || a == "--config" || a == "--set"; }
bool is_common_flag(const std::string& a) {
  return a == "-v" || a == "--verbose" || a == "-q" || a == "--quiet" || a.rfind("--config=", 0) == 0 ||
         a.rfind("--set=", 0) == 0;
}
std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}
}  // namespace

StageArguments arrange_stage_arguments(const std::vector<std::string>& args, const std::vector<std::string>& stages) {
  StageArguments out;
  std::vector<std::string> before;  // common options seen before the stage
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (takes_value(a) && i + 1 < args.size()) {
      before.push_back(a);
      before.push_back(args[++i]);
      continue;
    }
    if (is_common_flag(a)) {
      before.push_back(a);
      continue;
    }
    if (!a.empty() && a[0] == '-') {  // --help, --version, or something CLI11 will explain
      out.args = args;
      return out;
    }
    if (std::find(stages.begin(), stages.end(), a) == stages.end()) {
      const std::string near = closest_name(a, stages);
      out.error = "unknown stage '" + a + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                  "; the stages are " + joined(stages);
      return out;
    }
    // The stage, then the options that came before it, then the rest as given.
    out.args.push_back(a);
    out.args.insert(out.args.end(), before.begin(), before.end());
    out.args.insert(out.args.end(), args.begin() + long(i) + 1, args.end());
    return out;
  }
  out.args = args;  // no stage at all: CLI11 says one is required
  return out;
}

}  // namespace ds
