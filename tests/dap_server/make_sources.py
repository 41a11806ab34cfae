#!/usr/bin/python3
"""Writes small NetCDF sources shaped like the real ones, with values given by formulas the
tests recompute, so a fetched value can be checked against its source without trusting any of
our own reading code.

    /usr/bin/python3 make_sources.py OUT_DIR

udg_like.nc   ERA-Interim as UDG stores it: one variable per level (Z500 packed as int16 with
              scale_factor/add_offset, T850 float), longitudes 0..355 (step 5), latitudes
              90..-90 (descending), time in hours since 1900-01-01, 1999-12-01..2002-02-28 daily.
plev_like.nc  a level dimension in Pa (ta(time, plev, lat, lon)), longitudes -180..175,
              ascending latitudes, days since 2000-01-01, 2000-01-01..2001-12-31.
pr_like.nc    EWEMBI-like precipitation in kg m-2 s-1 with _FillValue over "ocean"
              (lon < -100), 0.5 deg, -110..-90 x 30..40, 2000-01-01..2001-12-31.

The formulas (t: days since 1970-01-01, lat, lon in the source's own degrees):
    Z500 = 50000 + 10*lat + 0.5*lon + 0.01*t        (m2 s-2; packed: scale 0.5, offset 50000)
    T850 = 250 + 0.1*lat - 0.01*lon + 0.001*t       (K)
    ta   = 200 + plev_hPa/10 + 0.1*lat + 0.01*lon + 0.001*t
    pr   = 1e-5 * (1 + (lat - 30) + 0.1*(lon + 110)) * (1 + (t % 7))   (NaN -> fill where lon < -100)
"""
import datetime as dt
import sys

import netCDF4
import numpy as np

EPOCH = dt.date(1970, 1, 1)


def days(first, last):
    d0 = (first - EPOCH).days
    return np.arange(d0, (last - EPOCH).days + 1, dtype="f8")


def axes(ds, t_units, t_values, lat, lon, plev=None, plev_units="Pa"):
    ds.createDimension("time", len(t_values))
    if plev is not None:
        ds.createDimension("plev", len(plev))
    ds.createDimension("lat", len(lat))
    ds.createDimension("lon", len(lon))
    t = ds.createVariable("time", "f8", ("time",))
    t.units, t.calendar, t.standard_name = t_units, "standard", "time"
    t[:] = t_values
    if plev is not None:
        p = ds.createVariable("plev", "f8", ("plev",))
        p.units = plev_units
        p[:] = plev
    y = ds.createVariable("lat", "f8", ("lat",))
    y.units = "degrees_north"
    y[:] = lat
    x = ds.createVariable("lon", "f8", ("lon",))
    x.units = "degrees_east"
    x[:] = lon


def udg_like(path):
    t = days(dt.date(1999, 12, 1), dt.date(2002, 2, 28))
    lat = np.arange(90, -90.1, -5.0)
    lon = np.arange(0, 360, 5.0)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        # hours since 1900-01-01, at 12:00 of each day
        axes(ds, "hours since 1900-01-01 00:00:00", (t + (EPOCH - dt.date(1900, 1, 1)).days) * 24 + 12, lat, lon)
        T, Y, X = np.meshgrid(t, lat, lon, indexing="ij")
        z = ds.createVariable("Z500", "i2", ("time", "lat", "lon"), fill_value=np.int16(-32767))
        z.set_auto_maskandscale(False)
        z.units, z.scale_factor, z.add_offset = "m2 s-2", 0.5, 50000.0
        z[:] = np.round((50000 + 10 * Y + 0.5 * X + 0.01 * T - 50000.0) / 0.5).astype("i2")
        ta = ds.createVariable("T850", "f4", ("time", "lat", "lon"))
        ta.units = "K"
        ta[:] = (250 + 0.1 * Y - 0.01 * X + 0.001 * T).astype("f4")


def plev_like(path):
    t = days(dt.date(2000, 1, 1), dt.date(2001, 12, 31))
    lat = np.arange(20, 50.1, 2.5)
    lon = np.arange(-180, 180, 5.0)
    plev = np.array([100000.0, 85000.0, 50000.0])
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        axes(ds, "days since 2000-01-01", t - (dt.date(2000, 1, 1) - EPOCH).days, lat, lon, plev, "Pa")
        T, P, Y, X = np.meshgrid(t, plev / 100, lat, lon, indexing="ij")
        v = ds.createVariable("ta", "f4", ("time", "plev", "lat", "lon"))
        v.units = "K"
        v[:] = (200 + P / 10 + 0.1 * Y + 0.01 * X + 0.001 * T).astype("f4")


def pr_like(path):
    t = days(dt.date(2000, 1, 1), dt.date(2001, 12, 31))
    lat = np.arange(30.25, 40, 0.5)
    lon = np.arange(-109.75, -90, 0.5)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        axes(ds, "days since 1970-01-01 00:00:00", t, lat, lon)
        T, Y, X = np.meshgrid(t, lat, lon, indexing="ij")
        v = ds.createVariable("pr", "f4", ("time", "lat", "lon"), fill_value=np.float32(1e20))
        v.units = "kg m-2 s-1"
        val = 1e-5 * (1 + (Y - 30) + 0.1 * (X + 110)) * (1 + np.mod(T, 7))
        val[X < -100] = 1e20
        v.set_auto_maskandscale(False)
        v[:] = val.astype("f4")


if __name__ == "__main__":
    out = sys.argv[1]
    udg_like(out + "/udg_like.nc")
    plev_like(out + "/plev_like.nc")
    pr_like(out + "/pr_like.nc")
