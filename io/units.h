// Units of the sources, as real archives spell them ("Kg/m^2/s", "kg.kg-1", "Pascals",
// "Celsius", "m**2 s**-2", "1"), converted through udunits2 (Debian's libudunits2; its XML
// database comes from libudunits2-data), the library CDO, NCO and the CF checker use. Every
// conversion fetch needs is affine (a scale and an offset: Pa -> hPa, degC -> K), so a
// conversion is kept as two numbers: a field's plan stays plain data that a worker process
// inherits, and the chunk's ledger entry can name it.
#pragma once
#include <string>

namespace ds {

struct UnitConversion {
  double scale = 1, offset = 0;  // to = from * scale + offset
  bool identity() const { return scale == 1 && offset == 0; }
};

// Whether udunits2 understands `units` (after the normalization below).
bool units_known(const std::string& units);

// Whether udunits2 converts `from` to `to` (both known, of one dimension: mm/day and m s-1).
bool units_convertible(const std::string& from, const std::string& to);

// The conversion from `from` to `to`. Spellings udunits rejects are normalized first: `**`
// becomes `^`, and a word it does not know is tried in lower case, then upper case ("Kg" ->
// "kg", "k" -> "K"). Throws InputError naming `where` and both units when either is unknown or
// they are not convertible (m to K), or the conversion is not affine (a logarithmic unit).
UnitConversion unit_conversion(const std::string& from, const std::string& to, const std::string& where);

}  // namespace ds
