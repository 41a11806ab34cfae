#include "io/command_line.h"

#include <regex>
#include <vector>

namespace ds {

namespace {
std::vector<std::string>& recorded() {
  static std::vector<std::string> args;
  return args;
}

// 'x' for a POSIX shell when x holds anything beyond a safe set of characters.
std::string shell_quoted(const std::string& a) {
  if (!a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") ==
                        std::string::npos)
    return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

void record_command_line(int argc, const char* const* argv) {
  recorded().assign(argv, argv + argc);
  if (!recorded().empty()) recorded()[0] = "downscale";  // the program, not the path it was run from
}

std::string command_line() {
  if (recorded().empty()) return "downscale";
  // Credentials in a URL (--set fetch.predictors.source=https://user:password@host/...) never
  // reach a file: "scheme://user:password@" becomes "scheme://".
  static const std::regex credentials(R"(([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]*@)");
  std::string s;
  for (const auto& a : recorded()) s += (s.empty() ? "" : " ") + shell_quoted(std::regex_replace(a, credentials, "$1"));
  return s;
}

}  // namespace ds
