#!/usr/bin/python3
"""Checks a Chrome/Perfetto JSON trace (train --timeline) with the rules Perfetto's importer
applies to slices, so none is dropped or misdrawn:
  - ts and dur are numbers in integer microseconds (up to 1e-3 µs of float noise), dur >= 0;
  - pids count from 1 (Perfetto treats pid 0 as the swapper/idle process);
  - on each (pid, tid) track, complete slices (ph X) nest properly: a slice that starts inside
    another ends inside it too (a partial overlap is dropped by Perfetto);
  - every B has its E on the same track, in order, with the same name when E names one.
    trace_check.py TRACE.json
Prints a summary; exit 1 on any problem.
"""
import json
import sys
from collections import defaultdict


def integer_us(x):
    return isinstance(x, (int, float)) and abs(x - round(x)) <= 1e-3


def check(trace):
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    problems = []
    slices = defaultdict(list)  # (pid, tid) -> [(start, end, name)]
    open_b = defaultdict(list)
    pids = set()
    for i, e in enumerate(events):
        ph, pid = e.get("ph"), e.get("pid")
        where = f"event {i} ({e.get('name')!r}, ph {ph})"
        if not isinstance(pid, int) or pid < 1:
            problems.append(f"{where}: pid {pid!r}, Perfetto wants pids from 1")
            continue
        pids.add(pid)
        track = (pid, e.get("tid", 0))
        if ph in ("X", "B", "E"):
            if not integer_us(e.get("ts")):
                problems.append(f"{where}: ts {e.get('ts')!r} is not integer microseconds")
                continue
        if ph == "X":
            dur = e.get("dur")
            if not integer_us(dur) or dur < 0:
                problems.append(f"{where}: dur {dur!r} is not a non-negative integer of microseconds")
                continue
            slices[track].append((round(e["ts"]), round(e["ts"]) + round(dur), e.get("name")))
        elif ph == "B":
            open_b[track].append((round(e["ts"]), e.get("name")))
        elif ph == "E":
            if not open_b[track]:
                problems.append(f"{where}: E without a B on pid {track[0]} tid {track[1]}")
                continue
            start, name = open_b[track].pop()
            if e.get("name") and e["name"] != name:
                problems.append(f"{where}: E named {e['name']!r} closes B {name!r}")
            slices[track].append((start, round(e["ts"]), name))
    for track, stack in open_b.items():
        for start, name in stack:
            problems.append(f"B {name!r} at {start} µs on pid {track[0]} tid {track[1]} has no E")
    nslices = 0
    for track, sl in slices.items():
        nslices += len(sl)
        # Longest first among equal starts: the parent opens before its children.
        sl.sort(key=lambda s: (s[0], -(s[1] - s[0])))
        stack = []
        for start, end, name in sl:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                p = stack[-1]
                problems.append(f"pid {track[0]} tid {track[1]}: {name!r} [{start}, {end}] µs overlaps "
                                f"{p[2]!r} [{p[0]}, {p[1]}] µs partially")
            stack.append((start, end, name))
    return nslices, len(slices), sorted(pids), problems


def main(argv):
    if len(argv) != 1:
        print(__doc__)
        return 2
    with open(argv[0]) as f:
        nslices, ntracks, pids, problems = check(json.load(f))
    ok = not problems and nslices > 0
    print(f"{'OK  ' if ok else 'FAIL'} {argv[0]}: {nslices} slices on {ntracks} tracks, pids {pids}: "
          f"integer µs, properly nested, {len(problems)} problems")
    for p in problems[:20]:
        print("    " + p)
    if nslices == 0:
        print("    no slices at all")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
