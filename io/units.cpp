#include "io/units.h"

#include <udunits2.h>

#include <cctype>
#include <cmath>
#include <regex>
#include <memory>
#include <mutex>

#include "io/error.h"

namespace ds {

namespace {

struct SystemDeleter {
  void operator()(ut_system* s) const { ut_free_system(s); }
};
struct UnitDeleter {
  void operator()(ut_unit* u) const { ut_free(u); }
};
struct ConverterDeleter {
  void operator()(cv_converter* c) const { cv_free(c); }
};
using Unit = std::unique_ptr<ut_unit, UnitDeleter>;
using Converter = std::unique_ptr<cv_converter, ConverterDeleter>;

// The unit database, read once per process (reading the XML takes ~20 ms). Kept for the
// process's lifetime: units parsed from it must not outlive it.
ut_system* unit_system() {
  static std::unique_ptr<ut_system, SystemDeleter> sys;
  static std::once_flag once;
  std::call_once(once, [] {
    ut_set_error_message_handler(ut_ignore);  // our messages name the file and variable instead
    sys.reset(ut_read_xml(nullptr));
  });
  if (!sys)
    throw Error("cannot read the udunits2 unit database (install libudunits2-data, or set UDUNITS2_XML_PATH)");
  return sys.get();
}

Unit parse_raw(const std::string& s) {
  return Unit(ut_parse(unit_system(), s.c_str(), UT_UTF8));
}

std::string with_case(std::string w, int (*f)(int)) {
  for (auto& ch : w) ch = static_cast<char>(f(static_cast<unsigned char>(ch)));
  return w;
}

// `**` -> `^`, then every word udunits does not know alone is tried in lower, then upper case.
std::string normalize(const std::string& units) {
  std::string s;
  for (size_t i = 0; i < units.size(); ++i) {
    if (units.compare(i, 2, "**") == 0) s += '^', ++i;
    else s += units[i];
  }
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (!std::isalpha(static_cast<unsigned char>(s[i]))) {
      out += s[i++];
      continue;
    }
    size_t j = i;
    while (j < s.size() && (std::isalpha(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
    std::string word = s.substr(i, j - i);
    if (!parse_raw(word)) {
      for (auto f : {::tolower, ::toupper})
        if (parse_raw(with_case(word, f))) {
          word = with_case(word, f);
          break;
        }
    }
    out += word;
    i = j;
  }
  return out;
}

// "degrees Celsius" (CRU TS, some station data) is, to udunits, a plane angle in degrees times a
// Celsius temperature: a product convertible to K, by a factor pi/180 (fetch wrote -273 degC).
// Any "degree(s)"/"deg" followed by a space and a temperature scale is that scale.
std::string temperature_spelling(const std::string& units) {
  static const std::regex spelled(R"(^\s*(deg|degree|degrees)\s+(celsius|centigrade|c|kelvin|k|fahrenheit|f)\s*$)",
                                  std::regex::icase);
  std::smatch m;
  if (!std::regex_match(units, m, spelled)) return units;
  const char scale = char(std::tolower(static_cast<unsigned char>(m[2].str()[0])));
  return scale == 'k' ? "K" : scale == 'f' ? "degF" : "degC";
}

Unit parse(const std::string& spelled_units) {
  if (spelled_units.empty()) return nullptr;
  const std::string units = temperature_spelling(spelled_units);
  Unit u = parse_raw(units);
  if (!u) u = parse_raw(normalize(units));
  return u;
}

}  // namespace

bool units_known(const std::string& units) { return parse(units) != nullptr; }

bool units_convertible(const std::string& from, const std::string& to) {
  const Unit a = parse(from), b = parse(to);
  return a && b && ut_are_convertible(a.get(), b.get());
}

UnitConversion unit_conversion(const std::string& from, const std::string& to, const std::string& where) {
  if (from == to) return {};
  const Unit a = parse(from), b = parse(to);
  if (!a) throw InputError(where + ": units '" + from + "' are not a unit udunits2 knows (converting to '" + to + "')");
  if (!b) throw InputError(where + ": units '" + to + "' are not a unit udunits2 knows (converting from '" + from + "')");
  if (!ut_are_convertible(a.get(), b.get()))
    throw InputError(where + ": units '" + from + "' cannot be converted to '" + to + "'");
  const Converter cv(ut_get_converter(a.get(), b.get()));
  if (!cv) throw InputError(where + ": no conversion from '" + from + "' to '" + to + "'");
  UnitConversion c;
  c.offset = cv_convert_double(cv.get(), 0.0);
  c.scale = cv_convert_double(cv.get(), 1.0) - c.offset;
  // Affine? (Logarithmic units are not; fetch has no use for them.)
  const double x = 1000.0, want = c.scale * x + c.offset, got = cv_convert_double(cv.get(), x);
  if (!(std::abs(got - want) <= 1e-9 * std::max(1.0, std::abs(got))))
    throw InputError(where + ": the conversion from '" + from + "' to '" + to + "' is not linear");
  // Exact spellings of one unit ("kg kg-1" and "1") give scale 1 up to rounding: keep it exact,
  // so that the values are copied unchanged.
  if (std::abs(c.scale - 1) < 1e-12) c.scale = 1;
  if (std::abs(c.offset) < 1e-12) c.offset = 0;
  return c;
}

}  // namespace ds
