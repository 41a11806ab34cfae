#!/usr/bin/python3
"""The maps `downscale evaluate` draws per season (evaluate/evaluation_maps.h), checked as a user
would open them: for each map of the annual set (observed_mean, predicted_mean, bias and rocss for
precipitation, or rmse and pearson for another predictand; summary) and each season asked,
<map>_<season>.png exists, is a PNG of the annual map's size (the same grid and layout), is not a
copy of the annual file, and is not blank: inside the map area (a box well within the first
panel's frame, which starts at pixel (62, 40): evaluate/maps.cpp) at least a quarter of the pixels
are coloured (max - min channel > 30: a palette colour, not the grey of missing cells, the black
of coastlines or the white background) in more than 50 distinct colours (the demo's maps have
about 700 to 1800; a blank map has none). No map is drawn for a season not asked.

usage: season_maps_check.py EVALUATE_DIR SEASONS(e.g. DJF,JJA) [precipitation|continuous]
Exit 0 when all hold, 1 otherwise (each failure printed).
"""
import os
import sys

import numpy as np
from PIL import Image

MAPS = {"precipitation": ["observed_mean", "predicted_mean", "bias", "rocss"],
        "continuous": ["observed_mean", "predicted_mean", "bias", "rmse", "pearson"]}
ALL_SEASONS = ["DJF", "MAM", "JJA", "SON"]


def main():
    d, seasons = sys.argv[1], sys.argv[2].split(",")
    kind = sys.argv[3] if len(sys.argv) > 3 else "precipitation"
    failures = []
    checked = 0
    for name in MAPS[kind] + ["summary"]:
        annual = os.path.join(d, name + ".png")
        with Image.open(annual) as im:
            size = im.size
        for season in seasons:
            path = os.path.join(d, f"{name}_{season}.png")
            if not os.path.isfile(path):
                failures.append(f"{path}: missing")
                continue
            with Image.open(path) as im:
                if im.format != "PNG" or im.size != size:
                    failures.append(f"{path}: {im.format} {im.size}, the annual map is a PNG of {size}")
                    continue
                rgb = np.asarray(im.convert("RGB")).astype(int)
            if open(path, "rb").read() == open(annual, "rb").read():
                failures.append(f"{path}: the same bytes as {name}.png")
            area = rgb[60:300, 70:380]  # inside the first panel's map (at least 560 x 300 px here)
            coloured = area.max(axis=2) - area.min(axis=2) > 30
            colours = len(np.unique(area[coloured], axis=0))
            if coloured.mean() < 0.25 or colours <= 50:
                failures.append(f"{path}: blank? {coloured.mean():.0%} of the map area coloured, {colours} colours")
            checked += 1
        for season in set(ALL_SEASONS) - set(seasons):
            if os.path.exists(os.path.join(d, f"{name}_{season}.png")):
                failures.append(f"{name}_{season}.png written for a season not asked")
    for f in failures:
        print("season maps: " + f)
    print(f"season maps: {checked} maps of {len(seasons)} seasons checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
