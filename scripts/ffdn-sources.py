#!/usr/bin/env python3
"""Where an F-FDN sweep's segments came from: for each method and X value, over every trace
of the sweep, the segments each source delivered (local cache, processed, neighbours, cloud)
with the deadlines missed in parentheses, and the first segments of streams missed. Read from
each run's nodes/viewers/segments.csv (scripts/ffdn-experiments.sh writes them).

usage: scripts/ffdn-sources.py SWEEP_DIR X
  e.g. scripts/ffdn-sources.py results/ffdn/latency fed_delay
"""
import csv
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

METHODS = ["central-cloud", "cdn", "f-cdn", "i-fdn", "deterministic-ffdn", "robust-ffdn"]
# segments.csv's `source` values (`neighbor:NAME` counted as `neighbor`), in the table's order.
SOURCES = [("local-cache", "local cache"), ("process", "processed"),
           ("neighbor", "neighbours"), ("cloud", "cloud")]


def main(args):
    if len(args) != 2:
        sys.exit(__doc__)
    runs, x = Path(args[0]) / "runs", args[1]
    delivered = defaultdict(Counter)  # (method, x) -> source -> segments
    missed = defaultdict(Counter)
    first_missed = Counter()
    traces = defaultdict(set)
    unknown = Counter()
    for summary_path in sorted(runs.glob("*/summary.json")):
        vars_ = json.loads(summary_path.read_text())["vars"]
        key = (vars_["method"], vars_[x])
        traces[key].add(vars_["trace"])
        with open(summary_path.parent / "nodes/viewers/segments.csv", newline="") as f:
            for row in csv.DictReader(f):
                source = row["source"].split(":")[0]
                if source not in dict(SOURCES):
                    unknown[source] += 1
                delivered[key][source] += 1
                if row["missed"] == "true":
                    missed[key][source] += 1
                    first_missed[key] += row["index"] == "0"
    if not delivered:
        sys.exit(f"{runs}: no run with a summary.json")
    keys = sorted(delivered, key=lambda k: (METHODS.index(k[0]) if k[0] in METHODS else 99,
                                            float(k[1].rstrip("%ms"))))
    print(f"| method | {x} | traces | " + " | ".join(name for _, name in SOURCES)
          + " | first segments missed |")
    print("| --- " * (len(SOURCES) + 4) + "|")
    for key in keys:
        cells = []
        for source, _ in SOURCES:
            n = delivered[key][source]
            cells.append(f"{n:,} ({missed[key][source]})" if n else "—")
        print(f"| {key[0]} | {key[1]} | {len(traces[key])} | " + " | ".join(cells)
              + f" | {first_missed[key]} |")
    if unknown:
        print(f"\nsources not in the table: {dict(unknown)}")


if __name__ == "__main__":
    main(sys.argv[1:])
