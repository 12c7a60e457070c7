#!/usr/bin/env python3
"""RESULTS.md's F-FDN tables from a sweep's sweep.csv (scripts/ffdn-experiments.sh): the
deadline miss rate per method and X value, mean over traces ± the half-width of its 95%
interval (Student t, as `cdnlab sweep` computes it, to four decimals), the runs per cell, and
for each pair A-B named the paired difference A − B over the traces both ran; and each method's
change from the first X value to the last, paired by trace.

usage: scripts/ffdn-tables.py SWEEP_CSV X [A-B …]
  e.g. scripts/ffdn-tables.py results/ffdn/caching/sweep.csv caching robust-ffdn-deterministic-ffdn
"""
import csv
import sys
from collections import defaultdict
from statistics import mean, stdev

# t(0.975, df) for df = 1..30; the normal quantile beyond (src/sweep/table.rs).
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
METHODS = ["central-cloud", "cdn", "f-cdn", "i-fdn", "deterministic-ffdn", "robust-ffdn"]


def interval(samples):
    """Mean and 95% half-width of `samples`."""
    n = len(samples)
    if n < 2:
        return mean(samples), 0.0
    t = T975[n - 2] if n - 1 <= len(T975) else 1.960
    return mean(samples), t * stdev(samples) / n ** 0.5


def main(args):
    if len(args) < 2:
        sys.exit(__doc__)
    path, x = args[0], args[1]
    rates = defaultdict(dict)  # (x value, method) -> {trace: miss rate}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("failed") == "true" or not row.get("deadline_miss_rate"):
                continue
            rates[(row[x], row["method"])][row["trace"]] = float(row["deadline_miss_rate"])
    xs = sorted({k[0] for k in rates}, key=lambda v: float(v.rstrip("%ms")))
    methods = [m for m in METHODS if any((v, m) in rates for v in xs)]
    print(f"| {x} | " + " | ".join(methods) + " |")
    print("| --- " * (len(methods) + 1) + "|")
    for v in xs:
        cells = []
        for m in methods:
            traces = rates.get((v, m), {})
            if traces:
                avg, half = interval(list(traces.values()))
                cells.append(f"{avg:.4f} ± {half:.4f}")
            else:
                cells.append("—")
        print(f"| {v} | " + " | ".join(cells) + " |")
    counts = sorted({len(t) for t in rates.values()})
    print(f"\ntraces per cell: {', '.join(map(str, counts))}")
    if len(xs) > 1:
        first, last = xs[0], xs[-1]
        print(f"\npaired by trace, {x} {last} − {x} {first}, per method (mean ± 95% half-width):")
        for m in methods:
            ta, tb = rates.get((last, m), {}), rates.get((first, m), {})
            both = sorted(set(ta) & set(tb))
            if len(both) > 1:
                avg, half = interval([ta[t] - tb[t] for t in both])
                print(f"  {m}: {avg:+.4f} ± {half:.4f} ({len(both)} traces)")
    for pair in args[2:]:
        a, b = next((pair[:i], pair[i + 1:]) for i in range(len(pair))
                    if pair[i] == "-" and pair[:i] in METHODS and pair[i + 1:] in METHODS)
        print(f"\npaired by trace, {a} − {b} (mean ± 95% half-width):")
        for v in xs:
            ta, tb = rates.get((v, a), {}), rates.get((v, b), {})
            both = sorted(set(ta) & set(tb))
            if both:
                avg, half = interval([ta[t] - tb[t] for t in both])
                print(f"  {x} {v}: {avg:+.4f} ± {half:.4f} ({len(both)} traces)")


if __name__ == "__main__":
    main(sys.argv[1:])
