#!/usr/bin/python3
"""An independent reference for `downscale evaluate` on precipitation (VALUE indices and scores).

Recomputes, with numpy from the files a user has (the fetched observations fetch/predictand/pr.nc
and the product predict/precipitation.nc; not the training store, not the C++ code), every per-box
index and score that evaluate/scores.nc holds and every domain mean and median that
evaluate/scores.json and scores.csv report, and compares them.

Definitions (VALUE: Maraun et al. 2015, Gutierrez et al. 2019; the R package R.VALUE):
  wet day     precipitation >= 1 mm/day
  mean        mean of all days (mm/day)
  R01         share of wet days
  SDII        mean amount of the wet days (undefined without a wet day)
  P98         98th percentile of all days, R's default quantile (type 7, linear between order
              statistics, as R.VALUE's index.prcXXth)
  P98Wet      the same of the wet days only (index.prcXXth(prob = 0.98, threshold = 1))
  Wet/DryAnnualMaxSpell
              median (type 7) over the calendar years of each year's longest run of wet / dry
              (< 1 mm) days (index.spellmax.annual.prcXXth, prob 0.5): runs are cut at 1 January
              and wherever two kept days are not one calendar day apart (a missing day, a gap);
              a year without such a day has 0; computed here from the dates of the time axis
  RMSE        sqrt(mean((pred - obs)^2)) (R.VALUE measure.rmse); RMSE_wet the same on observed wet days
  Spearman    Pearson correlation of the ranks, ties given their average rank
  ROCSS       2 AUC - 1, AUC the probability that a random observed wet day scores higher than a
              random observed dry day, ties one half (computed here from the pairs themselves,
              not from a rank sum); the score is p_wet for the CNN's outputs, the amount otherwise
  relative bias  (index_pred - index_obs) / index_obs on boxes where index_obs > 0
  R01_bias    R01_pred - R01_obs; the spells' biases likewise pred - obs (days)
  members     indices and scores per member, then the member mean (R.VALUE's wrapperFUN:
              mean(..., na.rm = TRUE)); relative biases of the member-mean index
  domain      mean and median over the land boxes where the per-box value is defined
Days where either series is missing are left out pairwise (evaluate_reference.sh marks some
observed days missing: whole days and single boxes, inside long spells and at 1 January). Land:
the boxes the product predicts.

The climatology baseline (each box's mean over the training years, every test day) is recomputed
from pr.nc too. The linear baseline (principal components of the store's predictors) is not: its
domain numbers are checked against its own per-box fields in scores.nc (the aggregation only).

usage: evaluate_reference.py RUN_DIR FIRST_TRAIN_YEAR LAST_TRAIN_YEAR [SEASONS]
SEASONS (e.g. DJF,JJA: what evaluate.seasons listed besides annual): each season's figures too,
recomputed on the test days of its calendar months (scores.json "seasons", the scores.csv rows of
its `season` column, the scores.nc fields <index>_<method>_<season>).
       evaluate_reference.py --continuous VAR PREDICT_DIR EVALUATE_DIR OBS_FILE FIRST LAST [MONTHS]
The second form checks a continuous predictand (tas): bias = mean(pred) - mean(obs), RMSE, Pearson
correlation and sd(pred) / sd(obs) (n - 1 both) per box, for the CNN and climatology; MONTHS (e.g.
12,1,2) are the season, whose December belongs to the next season-year as in preprocess.
Exit 0 when everything agrees within the stated tolerances, 1 otherwise (each difference printed).
"""
import json
import sys
import warnings

import netCDF4
import numpy as np

SECONDS_PER_DAY = 86400.0
WET = 1.0  # mm/day

# Tolerances. The reference and evaluate read the same float32 values and both compute in double,
# so per-box values differ only by the order of summation: 1e-9 relative to the score's size in
# scores.json (double). scores.nc stores float32: half an ulp is 2^-24 = 6e-8 relative, so 2e-7.
# Relative biases divide by an observed index that can be small (a box where it hardly rains), so
# they get the same bound scaled by 1 / |index_obs| through comparing absolute values at 1e-9.
RTOL_JSON = 1e-9
RTOL_NC = 2e-7


def fail(msg):
    print("MISMATCH " + msg)
    fail.count += 1


fail.count = 0


def read_var(ds, name):
    v = ds.variables[name]
    v.set_auto_mask(True)
    return np.ma.filled(v[:].astype(np.float32), np.nan)


def dates_of(ds):
    t = ds.variables["time"]
    d = netCDF4.num2date(t[:], t.units, getattr(t, "calendar", "standard"))
    return [(x.year, x.month, x.day) for x in d]


SEASONS = {"DJF": (12, 1, 2), "MAM": (3, 4, 5), "JJA": (6, 7, 8), "SON": (9, 10, 11)}


def all_dates(ds):
    t = ds.variables["time"]
    return netCDF4.num2date(t[:], t.units, getattr(t, "calendar", "standard"))


def year_and_follows(ds):
    """Each day's year, and whether it is the calendar day after the day before it (cftime arithmetic)."""
    t = ds.variables["time"]
    d = netCDF4.num2date(t[:], t.units, getattr(t, "calendar", "standard"))
    follows = np.array([False] + [(b - a).days == 1 and (b - a).seconds == 0 for a, b in zip(d[:-1], d[1:])])
    return np.array([x.year for x in d]), follows


def annual_max_spell(state, years, follows):
    """Median over years of each year's longest run of True in state (the kept days, in order)."""
    if state.size == 0:
        return np.nan
    # A new segment where the year changes or the day is not the one after the previous kept day.
    start = np.ones(state.size, bool)
    start[1:] = (years[1:] != years[:-1]) | ~follows[1:]
    longest = {}
    seg = np.cumsum(start)
    for s_ in np.unique(seg):
        sel = seg == s_
        v = np.concatenate([[0], state[sel].astype(np.int8), [0]])
        edges = np.flatnonzero(np.diff(v))  # run starts and ends alternate
        run = (edges[1::2] - edges[0::2]).max() if edges.size else 0
        y = years[sel][0]
        longest[y] = max(longest.get(y, 0), run)
    return np.median(np.array(list(longest.values()), dtype=np.float64))


def average_ranks(x):
    """Ranks 1..n, ties sharing their average rank (from the counts of each distinct value)."""
    uniq, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)  # rank of each distinct value's last copy
    return (last - (counts - 1) / 2.0)[inv]


def pearson(a, b):
    a = a - a.mean()
    b = b - b.mean()
    saa, sbb = (a * a).sum(), (b * b).sum()
    return (a * b).sum() / np.sqrt(saa * sbb) if saa > 0 and sbb > 0 else np.nan


def auc_pairs(wet_scores, dry_scores):
    gt = (wet_scores[:, None] > dry_scores[None, :]).sum()
    eq = (wet_scores[:, None] == dry_scores[None, :]).sum()
    return (gt + 0.5 * eq) / (wet_scores.size * dry_scores.size)


def box_indices(x, years, follows):
    """mean, R01, SDII, P98, P98Wet, wet and dry spell of one box's series (the kept days)."""
    if x.size == 0:
        return [np.nan] * 7
    wet = x[x >= WET]
    return [x.mean(), wet.size / x.size, wet.mean() if wet.size else np.nan, np.percentile(x, 98),
            np.percentile(wet, 98) if wet.size else np.nan,
            annual_max_spell(x >= WET, years, follows), annual_max_spell(x < WET, years, follows)]


def box_scores(o, p, s):
    """RMSE, RMSE_wet, Spearman, ROCSS of prediction p (wet-day score s) against o."""
    e = p - o
    rmse = np.sqrt(np.mean(e * e)) if o.size else np.nan
    w = o >= WET
    rmse_wet = np.sqrt(np.mean(e[w] ** 2)) if w.any() else np.nan
    spearman = pearson(average_ranks(o), average_ranks(p)) if o.size > 1 else np.nan
    rocss = 2 * auc_pairs(s[w], s[~w]) - 1 if w.any() and (~w).any() else np.nan
    return [rmse, rmse_wet, spearman, rocss]


roc_cache = {}


def evaluate_method(obs, members, score, land, calendar):
    """Per-box member-mean indices and scores: dict name -> (npoints,) array."""
    years, follows = calendar
    npts = obs.shape[1]
    idx = np.full((len(members), 7, npts), np.nan)
    sc = np.full((len(members), 4, npts), np.nan)
    for m, x in enumerate(members):
        for k in np.flatnonzero(land):
            ok = np.isfinite(obs[:, k]) & np.isfinite(x[:, k])
            # A dropped day breaks a run: the kept day after it does not follow its predecessor.
            kept = np.flatnonzero(ok)
            fol = follows[kept] & np.concatenate([[False], np.diff(kept) == 1])
            idx[m, :, k] = box_indices(x[ok, k].astype(np.float64), years[kept], fol)
            oks = np.isfinite(obs[:, k]) & np.isfinite(score[:, k])
            o = obs[ok, k].astype(np.float64)
            rm, rw, sp, _ = box_scores(o, x[ok, k].astype(np.float64), o)
            key = (id(score), k)  # the CNN's outputs and members share p_wet: one ROC each box
            if key not in roc_cache:
                os_ = obs[oks, k].astype(np.float64)
                roc_cache[key] = box_scores(os_, os_, score[oks, k].astype(np.float64))[3]
            sc[m, :, k] = [rm, rw, sp, roc_cache[key]]
    with np.errstate(all="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            idx = np.nanmean(idx, axis=0)  # R.VALUE: mean(aux, na.rm = TRUE) over members
            sc = np.nanmean(sc, axis=0)
    names_i = ["mean", "r01", "sdii", "p98", "p98wet", "wetmaxspell", "drymaxspell"]
    names_s = ["rmse", "rmse_wet", "spearman", "rocss"]
    out = {n: idx[i] for i, n in enumerate(names_i)}
    out.update({n: sc[i] for i, n in enumerate(names_s)})
    return out


def domain(v):
    v = v[np.isfinite(v)]
    return (v.mean(), np.median(v)) if v.size else (np.nan, np.nan)


def relative_bias(pred, obs):
    ok = np.isfinite(obs) & (obs > 0) & np.isfinite(pred)
    return (pred[ok] - obs[ok]) / obs[ok]


def domain_scores(r, o):
    """The eleven domain scores of scores.json from per-box fields r (method) and o (observed)."""
    boxes = {
        "mean_relative_bias": relative_bias(r["mean"], o["mean"]),
        "R01_bias": r["r01"] - o["r01"],
        "SDII_relative_bias": relative_bias(r["sdii"], o["sdii"]),
        "P98_relative_bias": relative_bias(r["p98"], o["p98"]),
        "P98Wet_relative_bias": relative_bias(r["p98wet"], o["p98wet"]),
        "WetAnnualMaxSpell_bias": r["wetmaxspell"] - o["wetmaxspell"],
        "DryAnnualMaxSpell_bias": r["drymaxspell"] - o["drymaxspell"],
        "RMSE": r["rmse"],
        "RMSE_wet": r["rmse_wet"],
        "Spearman": r["spearman"],
        "ROCSS": r["rocss"],
    }
    return {k: domain(v) for k, v in boxes.items()}


def close(a, b, rtol, scale=1.0):
    if a is None or b is None or not np.isfinite(a) or not np.isfinite(b):
        na = a is None or not np.isfinite(a)
        nb = b is None or not np.isfinite(b)
        return na and nb, 0.0
    d = abs(a - b)
    return d <= rtol * max(abs(a), abs(b), scale), d


largest = {}


def note(name, d, size):
    rel = d / max(size, 1e-300)
    if rel > largest.get(name, (0, 0))[1]:
        largest[name] = (d, rel)


def compare_json(where, ref, got):
    for k, (mean, med) in ref.items():
        g = got.get(k)
        gm = got.get("median", {}).get(k)
        for label, a, b in (("mean", mean, g), ("median", med, gm)):
            ok, d = close(a, b, RTOL_JSON)
            note("json " + k, d, abs(a) if a is not None and np.isfinite(a) else 1)
            if not ok:
                fail(f"scores.json {where} {k} ({label} over boxes): reference {a!r}, evaluate {b!r}")


def compare_field(name, ref, nc, scale=1.0):
    if name not in nc.variables:
        fail(f"scores.nc: no variable {name}")
        return
    got = read_var(nc, name)[0].ravel().astype(np.float64) * scale
    ref = np.asarray(ref, dtype=np.float64)
    if not np.array_equal(np.isfinite(ref), np.isfinite(got)):
        fail(f"scores.nc {name}: defined on {np.isfinite(got).sum()} boxes, the reference on {np.isfinite(ref).sum()}")
        return
    ok = np.isfinite(ref)
    if not ok.any():
        return
    d = np.abs(ref[ok] - got[ok])
    bound = RTOL_NC * np.maximum(np.abs(ref[ok]), 1e-6 * np.abs(ref[ok]).max())
    note("nc " + name.split("_")[0], d.max(), np.abs(ref[ok]).max())
    if (d > bound).any():
        i = np.argmax(d - bound)
        fail(f"scores.nc {name}: box {np.flatnonzero(ok)[i]} reference {ref[ok][i]!r}, file {got[ok][i]!r}")


def check_period(where, sfx, report, csv, nc, obs_land, methods, land, calendar, nt):
    """Recomputes one period's figures (annual, or a season: its days only) and compares them with
    report (scores.json's top level or its season), the CSV rows of `where` and the scores.nc
    fields with suffix sfx ("" or "_DJF")."""
    observed = evaluate_method(obs_land, [obs_land], obs_land, land, calendar)
    ref_obs_domain = {"mean": observed["mean"], "R01": observed["r01"], "SDII": observed["sdii"], "P98": observed["p98"],
                      "P98Wet": observed["p98wet"], "WetAnnualMaxSpell": observed["wetmaxspell"],
                      "DryAnnualMaxSpell": observed["drymaxspell"]}

    if report["test_days"] != nt:
        fail(f"scores.json {where} test_days {report['test_days']}, the reference has {nt}")
    for k, v in ref_obs_domain.items():
        ok, d = close(domain(v)[0], report["observed"][k], RTOL_JSON)
        if not ok:
            fail(f"scores.json {where} observed {k}: reference {domain(v)[0]!r}, evaluate {report['observed'][k]!r}")
    flux = 1.0 / SECONDS_PER_DAY
    for n in ("mean", "sdii", "p98", "p98wet"):
        compare_field(f"{n}_observed{sfx}", observed[n] * flux, nc)
    for n in ("r01", "wetmaxspell", "drymaxspell"):
        compare_field(f"{n}_observed{sfx}", observed[n], nc)

    if set(report["methods"]) != set(methods) | {"linear_pcs"}:
        fail(f"scores.json {where} methods {sorted(report['methods'])}, expected {sorted(set(methods) | {'linear_pcs'})}")

    for name, (members, score) in methods.items():
        r = evaluate_method(obs_land, members, score, land, calendar)
        got = report["methods"].get(name, {})
        if got.get("members") != len(members):
            fail(f"scores.json {where} {name}: members {got.get('members')}, the product has {len(members)}")
        ref = domain_scores(r, observed)
        compare_json(f"{where} {name}", ref, got)
        for k, (mean, med) in ref.items():  # the CSV: the same numbers as text
            for col, a in ((k, mean), (k + "_median", med)):
                b = float(csv[(where, name)][col])
                ok, _ = close(a, b, 1e-5)  # printed with 6 significant digits
                if not ok:
                    fail(f"scores.csv {where} {name} {col}: reference {a!r}, file {b!r}")
        for n in ("mean", "sdii", "p98", "p98wet", "rmse", "rmse_wet"):
            compare_field(f"{n}_{name}{sfx}", r[n] * flux, nc)
        compare_field(f"bias_{name}{sfx}", (r["mean"] - observed["mean"]) * flux, nc)
        for n in ("r01", "wetmaxspell", "drymaxspell", "spearman", "rocss"):
            compare_field(f"{n}_{name}{sfx}", r[n], nc)

    # linear_pcs: its domain scores from its own per-box fields in scores.nc (the aggregation),
    # amounts back to mm/day.
    def field(n):
        v = read_var(nc, n)[0].ravel().astype(np.float64)
        return v * SECONDS_PER_DAY if n.split("_")[0] in ("mean", "sdii", "p98", "p98wet", "rmse") else v

    indices = ("mean", "r01", "sdii", "p98", "p98wet", "wetmaxspell", "drymaxspell")
    lin = {n: field(f"{n}_linear_pcs{sfx}") for n in indices + ("rmse", "rmse_wet", "spearman", "rocss")}
    obs_nc = {n: field(f"{n}_observed{sfx}") for n in indices}
    got = report["methods"]["linear_pcs"]
    for k, (mean, med) in domain_scores(lin, obs_nc).items():
        for label, a, b in (("mean", mean, got[k]), ("median", med, got["median"][k])):
            # From float32 fields: each per-box value within 6e-8 relative, a relative bias
            # (two of them) within 1.2e-7 of its ratio; 1e-6 of max(|value|, 1) bounds both.
            ok, _ = close(a, b, 1e-6, scale=1.0)
            if not ok:
                fail(f"scores.json {where} linear_pcs {k} ({label}): from scores.nc {a!r}, evaluate {b!r}")


def observations_of(pred, obsf, var):
    """The observations on the prediction's boxes: the prediction's and the observation file's
    dates, the observation rows of the prediction's days, the number of boxes, and every
    observed day of `var` cut to the prediction's grid."""
    pdates, odates = dates_of(pred), dates_of(obsf)
    where = {d: i for i, d in enumerate(odates)}
    tsel = np.array([where[d] for d in pdates])
    plat, plon = pred.variables["lat"][:], pred.variables["lon"][:]
    olat, olon = obsf.variables["lat"][:], obsf.variables["lon"][:]
    rsel = np.array([np.flatnonzero(np.abs(olat - y) < 1e-6)[0] for y in plat])
    csel = np.array([np.flatnonzero(np.abs(olon - x) < 1e-6)[0] for x in plon])
    return pdates, odates, tsel, plat.size * plon.size, read_var(obsf, var)[:, rsel][:, :, csel]


def main():
    run, y0, y1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    wanted_seasons = sys.argv[4].split(",") if len(sys.argv) > 4 else []
    pred = netCDF4.Dataset(f"{run}/predict/precipitation.nc")
    obsf = netCDF4.Dataset(f"{run}/fetch/predictand/pr.nc")
    nc = netCDF4.Dataset(f"{run}/evaluate/scores.nc")
    report = json.load(open(f"{run}/evaluate/scores.json"))

    # The observations of the prediction's days and boxes (pr.nc is mm/day).
    assert obsf.variables["pr"].units == "mm/day", obsf.variables["pr"].units
    pdates, odates, tsel, npts, allobs = observations_of(pred, obsf, "pr")
    nt = len(pdates)
    obs = allobs[tsel].reshape(nt, npts)

    # The product in mm/day: kg m-2 s-1 x 86400 in float32, as xarray users compute it (the product
    # of a float32 and 86400 is exact in double, so this is the float32 nearest the exact value).
    def mmday(name):
        return (read_var(pred, name) * np.float32(SECONDS_PER_DAY)).astype(np.float32)

    pr = mmday("pr").reshape(nt, npts)
    land = np.isfinite(pr).any(axis=0)
    p_wet = read_var(pred, "p_wet").reshape(nt, npts)
    methods = {
        "cnn_deterministic": ([pr], p_wet),
        "cnn_expected": ([mmday("pr_expected").reshape(nt, npts)], p_wet),
    }
    if "pr_stochastic" in pred.variables:
        st = mmday("pr_stochastic")
        methods["cnn_stochastic"] = ([st[:, m].reshape(nt, npts) for m in range(st.shape[1])], p_wet)
    # Climatology: the training years' mean of each box, as a float32 series like every product.
    train = np.array([y0 <= d[0] <= y1 for d in odates])
    with np.errstate(all="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            clim = np.nanmean(allobs[train].reshape(train.sum(), npts).astype(np.float64), axis=0).astype(np.float32)
    clim = np.where(land, clim, np.nan).astype(np.float32)
    cser = np.broadcast_to(clim, (nt, npts)).copy()
    methods["climatology"] = ([cser], cser)

    obs_land = np.where(land, obs, np.nan)
    calendar = year_and_follows(pred)
    csv = {}
    lines = open(f"{run}/evaluate/scores.csv").read().split("\n")
    header = lines[0].split(",")
    seasonal = header[0] == "season"
    if seasonal != bool(wanted_seasons):
        fail(f"scores.csv: season column {'present' if seasonal else 'absent'}, seasons asked: {wanted_seasons}")
    for line in lines[1:]:
        if line:
            f = dict(zip(header, line.split(",")))
            csv[(f.get("season", "annual"), f["method"])] = f
    check_period("annual", "", report, csv, nc, obs_land, methods, land, calendar, nt)

    # Each season: the test days of its calendar months (DJF: December with January and February
    # of the test period), the same figures recomputed on them; runs cut where two kept days are
    # not one calendar day apart (the end of February to 1 December is a gap).
    if set(report.get("seasons", {})) != set(wanted_seasons):
        fail(f"scores.json seasons {sorted(report.get('seasons', {}))}, asked {sorted(wanted_seasons)}")
    cal_dates = all_dates(pred)
    years = calendar[0]
    for season in wanted_seasons:
        if season not in report.get("seasons", {}):
            continue
        months = SEASONS[season]
        steps = np.array([i for i, d in enumerate(pdates) if d[1] in months])
        fol = np.array([False] + [(cal_dates[b] - cal_dates[a]).days == 1 for a, b in zip(steps[:-1], steps[1:])])
        sub, scores = {}, {}  # the CNN's outputs share p_wet: one subset of it, one ROC per box
        for name, (members, score) in methods.items():
            sm = [x[steps] for x in members]
            if score is not members[0] and id(score) not in scores:
                scores[id(score)] = score[steps]
            sub[name] = (sm, sm[0] if score is members[0] else scores[id(score)])
        roc_cache.clear()  # keyed by id(): the season's arrays are new objects
        check_period(season, "_" + season, report["seasons"][season], csv, nc, obs_land[steps], sub, land,
                     (years[steps], fol), len(steps))
        roc_cache.clear()
        print(f"  season {season}: {len(steps)} days recomputed")

    for k in sorted(largest):
        d, rel = largest[k]
        print(f"  largest difference {k:<28} {d:.3g} (relative {rel:.2g})")
    nm = len(methods)
    print(f"evaluate reference: {nt} days, {int(land.sum())} land boxes, {nm} methods recomputed and linear_pcs "
          f"aggregated: {fail.count} mismatches")
    return 1 if fail.count else 0


def continuous(var, pdir, edir, obs_path, y0, y1, months):
    pred = netCDF4.Dataset(f"{pdir}/{var}.nc")
    obsf = netCDF4.Dataset(obs_path)
    nc = netCDF4.Dataset(f"{edir}/scores.nc")
    report = json.load(open(f"{edir}/scores.json"))
    pdates, odates, tsel, npts, allobs = observations_of(pred, obsf, var)
    nt = len(pdates)
    obs = allobs[tsel].reshape(nt, npts).astype(np.float64)
    x = read_var(pred, var).reshape(nt, npts)
    land = np.isfinite(x).any(axis=0)
    obs[:, ~land] = np.nan
    # Climatology over the training season-years (December counts towards the next year).
    sy = np.array([d[0] + (1 if d[1] == 12 and 12 in months and 1 in months else 0) for d in odates])
    train = np.array([d[1] in months for d in odates]) & (sy >= y0) & (sy <= y1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        clim = np.nanmean(allobs[train].reshape(train.sum(), npts).astype(np.float64), axis=0).astype(np.float32)
    methods = {"cnn": x, "climatology": np.broadcast_to(np.where(land, clim, np.nan), (nt, npts)).astype(np.float32)}
    obs_mean, obs_sd = np.full(npts, np.nan), np.full(npts, np.nan)
    for k in np.flatnonzero(land):
        o = obs[np.isfinite(obs[:, k]), k]
        obs_mean[k], obs_sd[k] = o.mean(), o.std(ddof=1)
    compare_field("mean_observed", obs_mean, nc)
    compare_field("sd_observed", obs_sd, nc)
    for k, v in (("mean", obs_mean), ("sd", obs_sd)):
        ok, _ = close(domain(v)[0], report["observed"][k], RTOL_JSON)
        if not ok:
            fail(f"scores.json observed {k}: reference {domain(v)[0]!r}, evaluate {report['observed'][k]!r}")
    for name, series in methods.items():
        r = {n: np.full(npts, np.nan) for n in ("mean", "bias", "rmse", "pearson", "sd_ratio")}
        for k in np.flatnonzero(land):
            ok = np.isfinite(obs[:, k]) & np.isfinite(series[:, k])
            o, p = obs[ok, k], series[ok, k].astype(np.float64)
            so, sp = o.std(ddof=1), p.std(ddof=1)
            r["mean"][k], r["bias"][k] = p.mean(), p.mean() - o.mean()
            r["rmse"][k] = np.sqrt(np.mean((p - o) ** 2))
            r["pearson"][k] = np.corrcoef(o, p)[0, 1] if so > 0 and sp > 0 else np.nan
            r["sd_ratio"][k] = sp / so if so > 0 else np.nan
        for n, v in r.items():
            compare_field(f"{n}_{name}", v, nc)
        ref = {"bias": domain(r["bias"]), "RMSE": domain(r["rmse"]), "Pearson": domain(r["pearson"]),
               "sd_ratio": domain(r["sd_ratio"])}
        compare_json(name, ref, report["methods"][name])
    for k in sorted(largest):
        d, rel = largest[k]
        print(f"  largest difference {k:<28} {d:.3g} (relative {rel:.2g})")
    print(f"evaluate reference ({var}): {nt} days, {int(land.sum())} boxes, cnn and climatology recomputed: "
          f"{fail.count} mismatches")
    return 1 if fail.count else 0


if __name__ == "__main__":
    if sys.argv[1] == "--continuous":
        a = sys.argv[2:]
        months = [int(m) for m in a[6].split(",")] if len(a) > 6 else list(range(1, 13))
        sys.exit(continuous(a[0], a[1], a[2], a[3], int(a[4]), int(a[5]), months))
    sys.exit(main())
