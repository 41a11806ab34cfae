#include "preprocess/data_terms.h"

#include <algorithm>
#include <cctype>

#include "preprocess/fetched_field.h"

namespace ds {

void DataTerms::add(const std::string& field, const FetchedField& file) {
  std::string license = file.original("license");
  if (license.empty()) license = file.original("licence");
  add(field, file.original("references"), license);
}

void DataTerms::add(const std::string& field, const std::string& references, const std::string& license) {
  note(references_, field, references);
  note(licenses_, field, license);
}

namespace {

// A provider's text on one line: each run of white space (newlines included) one space, none at
// the ends, so that every line of references() and license() is one text and its fields.
std::string one_line(const std::string& text) {
  std::string out;
  bool space = false;
  for (const char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

void DataTerms::note(Texts& texts, const std::string& field, const std::string& raw) {
  const std::string text = one_line(raw);
  if (text.empty()) return;
  auto it = std::find_if(texts.begin(), texts.end(), [&](const auto& t) { return t.first == text; });
  if (it == texts.end()) it = texts.insert(texts.end(), {text, {}});
  if (std::find(it->second.begin(), it->second.end(), field) == it->second.end()) it->second.push_back(field);
}

std::string DataTerms::text(const Texts& texts) {
  std::string out;
  for (const auto& [text, fields] : texts) {
    std::string who;
    for (const auto& s : fields) who += (who.empty() ? "" : ", ") + s;
    out += (out.empty() ? "" : "\n") + who + ": " + text;
  }
  return out;
}

}  // namespace ds
