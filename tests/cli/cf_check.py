#!/usr/bin/python3
"""CF check of downscale's outputs with what Debian ships.

    cf_check.py [--no-conventions] FILE...

For every variable of every file (and group; the HDF5 store opens through netCDF-4):
  - a standard_name (with at most one of CF's modifiers: "air_temperature standard_error")
    must exist in the standard names Debian ships: the CMIP6 tables of
    cmor-tables (/usr/share/cmor/CMIP6/*.json, "standard_name" with its "units") and ecCodes'
    cfName.def files (/usr/share/eccodes/definitions/**/cfName.def, names without units). This
    is a SUBSET of the CF standard name table: Debian does not ship the table's XML. Names in
    the CF table that neither source has are listed in SUPPLEMENT below with the table's
    canonical units, and reported as such;
  - its units must convert to that entry's canonical units through udunits2 (the `udunits2`
    program of udunits-bin); names known only from ecCodes (no units there) get their units
    parsed by udunits2, not compared;
  - any units attribute must parse in udunits2; a time coordinate's "<unit> since <date>"
    must convert to seconds since 1970-01-01;
  - coordinate variables (named as their dimension) and scalar coordinates have units (a
    realization index and string labels excepted) and, for latitude, longitude, time and
    vertical coordinates, `axis`; a `bounds` attribute names a variable of the file;
  - cell_methods reads as "name: method" pairs with CF's methods, over dimensions or CF's
    names (area, time, ...);
  - the file has a Conventions attribute starting "CF-" (not asked of the store:
    --no-conventions; it is an HDF5 training store that netCDF-4 reads, not a CF product).
Prints one summary line per file and the problems; exit 1 if any file has a problem.
"""
import glob
import json
import re
import subprocess
import sys

import netCDF4

# In the CF standard name table (v84) but in neither Debian source: name -> canonical units.
#   realization: the ensemble member index (predict's members).
#   lwe_precipitation_rate: "lwe" is liquid water equivalent, the depth of water per time; the
#     fetched pr in mm/day (fetch/chunk.cpp). CF standard name table v84, canonical units m s-1
#     (NERC vocabulary P07 CFSN0559); mm/day converts through udunits2.
SUPPLEMENT = {"realization": "1", "lwe_precipitation_rate": "m s-1"}

CELL_METHODS = {"point", "sum", "maximum", "maximum_absolute_value", "median", "mid_range", "minimum",
                "minimum_absolute_value", "mean", "mean_absolute_value", "mean_of_upper_decile", "mode",
                "range", "root_mean_square", "standard_deviation", "sum_of_squares", "variance"}
# CF's standard name modifiers (appendix C) and the units they give: None keeps the name's units.
MODIFIERS = {"standard_error": None, "detection_minimum": None, "number_of_observations": "1", "status_flag": ""}
AXIS_NAMES = {"latitude": "Y", "longitude": "X", "time": "T", "air_pressure": "Z", "height": "Z",
              "altitude": "Z", "depth": "Z"}


def load_tables():
    cmip = {}
    for path in sorted(glob.glob("/usr/share/cmor/CMIP6/*.json")):
        with open(path) as f:
            table = json.load(f)
        for section in ("variable_entry", "axis_entry"):
            for entry in table.get(section, {}).values():
                if isinstance(entry, dict) and entry.get("standard_name"):
                    units = entry.get("units", "").strip()
                    cmip.setdefault(entry["standard_name"], set())
                    if units and "?" not in units:
                        cmip[entry["standard_name"]].add(units)
    eccodes = set()
    for path in glob.glob("/usr/share/eccodes/definitions/**/cfName.def", recursive=True):
        with open(path, errors="replace") as f:
            eccodes.update(re.findall(r"^'([A-Za-z0-9_]+)'\s*=", f.read(), re.M))
    return cmip, eccodes


_udunits = {}


def udunits(have, want):
    """True if udunits2 converts `have` to `want` (its exit status is 0 either way: read stderr)."""
    key = (have, want)
    if key not in _udunits:
        r = subprocess.run(["udunits2", "-H", have, "-W", want], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL)
        _udunits[key] = r.returncode == 0 and not r.stderr.strip() and " = " in r.stdout
    return _udunits[key]


def units_parse(u):
    if " since " in u:
        return udunits(u, "seconds since 1970-01-01")
    return udunits(u, u)


def check_cell_methods(text, dims):
    problems = []
    # "name: [name: ...] method [where x] [over y] [within z] [(comment)]" repeated.
    body = re.sub(r"\([^)]*\)", "", text)
    tokens = body.split()
    names, i = [], 0
    while i < len(tokens):
        t = tokens[i]
        if t.endswith(":"):
            names.append(t[:-1])
            i += 1
            continue
        if not names:
            problems.append(f"cell_methods '{text}': '{t}' has no name before it")
            break
        if t not in CELL_METHODS:
            problems.append(f"cell_methods '{text}': '{t}' is not a CF method")
        for n in names:
            if n not in dims and n not in ("area", "time", "latitude", "longitude", "depth", "height", "lat", "lon"):
                problems.append(f"cell_methods '{text}': '{n}' is neither a dimension nor a CF name")
        names = []
        i += 1
        while i < len(tokens) and tokens[i] in ("where", "over", "within"):
            i += 2
    if names:
        problems.append(f"cell_methods '{text}': no method after '{names[-1]}:'")
    return problems


def check_file(path, cmip, eccodes, need_conventions):
    problems, counts = [], {"variables": 0, "cmip6": set(), "eccodes": set(), "supplement": set(),
                            "units": set(), "coords": 0}
    ds = netCDF4.Dataset(path)
    if need_conventions and not str(getattr(ds, "Conventions", "")).startswith("CF-"):
        problems.append("no Conventions attribute starting 'CF-'")

    def walk(group, prefix):
        for name, var in group.variables.items():
            where = f"{prefix}{name}"
            counts["variables"] += 1
            attrs = {k: var.getncattr(k) for k in var.ncattrs()}
            units = attrs.get("units")
            sn = attrs.get("standard_name")
            if isinstance(units, str):
                counts["units"].add(units)
                if not units_parse(units):
                    problems.append(f"{where}: units '{units}' do not parse in udunits2")
            if isinstance(sn, str) and len(sn.split()) == 2 and sn.split()[1] in MODIFIERS:
                sn, modifier = sn.split()
                if MODIFIERS[modifier] is not None:  # the modifier fixes the units
                    if MODIFIERS[modifier] and isinstance(units, str) and not udunits(units, MODIFIERS[modifier]):
                        problems.append(f"{where}: units '{units}' do not suit the modifier {modifier}")
                    units = None
            if isinstance(sn, str):
                if sn in cmip:
                    counts["cmip6"].add(sn)
                    canonical = cmip[sn]
                    if canonical and isinstance(units, str) and " since " not in units and \
                            not any(udunits(units, c) for c in canonical):
                        problems.append(f"{where}: units '{units}' do not convert to {sn}'s {sorted(canonical)}")
                elif sn in SUPPLEMENT:
                    counts["supplement"].add(sn)
                    if isinstance(units, str) and not udunits(units, SUPPLEMENT[sn]):
                        problems.append(f"{where}: units '{units}' do not convert to {sn}'s '{SUPPLEMENT[sn]}'")
                elif sn in eccodes:
                    counts["eccodes"].add(sn)
                else:
                    problems.append(f"{where}: standard_name '{sn}' is in neither the CMIP6 tables nor ecCodes")
            is_coord = (var.dimensions == (name,)) or (var.ndim == 0 and sn in AXIS_NAMES)
            if is_coord and var.dtype != str and var.dtype.kind not in "SU":
                counts["coords"] += 1
                if units is None and sn != "realization":
                    problems.append(f"{where}: coordinate without units")
                if sn in AXIS_NAMES and attrs.get("axis") != AXIS_NAMES[sn]:
                    problems.append(f"{where}: coordinate '{sn}' without axis {AXIS_NAMES[sn]}")
            if "bounds" in attrs and attrs["bounds"] not in group.variables:
                problems.append(f"{where}: bounds '{attrs['bounds']}' is not a variable")
            if "cell_methods" in attrs:
                problems.extend(f"{where}: {p}" for p in check_cell_methods(attrs["cell_methods"], var.dimensions))
        for gname, sub in group.groups.items():
            walk(sub, f"{prefix}{gname}/")

    walk(ds, "")
    ds.close()
    summary = (f"{'OK  ' if not problems else 'FAIL'} {path}: {counts['variables']} variables; standard names: "
               f"{len(counts['cmip6'])} in CMIP6 tables with units converted ({', '.join(sorted(counts['cmip6']))})")
    if counts["eccodes"]:
        summary += f", {len(counts['eccodes'])} in ecCodes only, units parsed ({', '.join(sorted(counts['eccodes']))})"
    if counts["supplement"]:
        summary += f", {len(counts['supplement'])} from the supplement ({', '.join(sorted(counts['supplement']))})"
    summary += f"; {len(counts['units'])} distinct units parse in udunits2; {counts['coords']} coordinates checked"
    return summary, problems


def main(argv):
    need_conventions = "--no-conventions" not in argv
    files = [a for a in argv if not a.startswith("--")]
    if not files:
        print(__doc__)
        return 2
    cmip, eccodes = load_tables()
    if not cmip:
        print("cf_check: no CMIP6 tables under /usr/share/cmor/CMIP6 (Debian package cmor-tables)")
        return 2
    failed = False
    for path in files:
        summary, problems = check_file(path, cmip, eccodes, need_conventions)
        print(summary)
        for p in problems:
            print(f"    {path}: {p}")
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
