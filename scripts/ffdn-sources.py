#!/usr/bin/env python3
"""Where an F-FDN sweep's segments came from: for each method and X value, over every trace
of the sweep, the segments each source delivered (local cache, processed, neighbours, cloud)
with the deadlines missed in parentheses; the same for streams' first segments alone; and how
much time the segments processed on demand had left. Read from each run's
nodes/viewers/segments.csv (scripts/ffdn-experiments.sh writes them).

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


def table(title, x, keys, traces, delivered, missed):
    """Prints one table: per method and X value, each source's segments (missed)."""
    print(f"{title}\n")
    print(f"| method | {x} | traces | " + " | ".join(name for _, name in SOURCES) + " |")
    print("| --- " * (len(SOURCES) + 3) + "|")
    for key in keys:
        cells = []
        for source, _ in SOURCES:
            n = delivered[key][source]
            cells.append(f"{n:,} ({missed[key][source]})" if n else "—")
        print(f"| {key[0]} | {key[1]} | {len(traces[key])} | " + " | ".join(cells) + " |")


def main(args):
    if len(args) != 2:
        sys.exit(__doc__)
    runs, x = Path(args[0]) / "runs", args[1]
    # (method, x) -> source -> segments, for every segment and for streams' first segments.
    delivered, missed = defaultdict(Counter), defaultdict(Counter)
    first_delivered, first_missed = defaultdict(Counter), defaultdict(Counter)
    traces = defaultdict(set)
    unknown = Counter()
    processed_slack = []  # deadline − arrival at the viewer, s, of segments processed on demand
    for summary_path in sorted(runs.glob("*/summary.json")):
        vars_ = json.loads(summary_path.read_text())["vars"]
        key = (vars_["method"], vars_[x])
        traces[key].add(vars_["trace"])
        with open(summary_path.parent / "nodes/viewers/segments.csv", newline="") as f:
            for row in csv.DictReader(f):
                source = row["source"].split(":")[0]
                if source not in dict(SOURCES):
                    unknown[source] += 1
                late = row["missed"] == "true"
                for counts, misses in [(delivered, missed)] + (
                        [(first_delivered, first_missed)] if row["index"] == "0" else []):
                    counts[key][source] += 1
                    misses[key][source] += late
                if source == "process" and row["received_s"]:
                    processed_slack.append(float(row["deadline_s"]) - float(row["received_s"]))
    if not delivered:
        sys.exit(f"{runs}: no run with a summary.json")
    keys = sorted(delivered, key=lambda k: (METHODS.index(k[0]) if k[0] in METHODS else 99,
                                            float(k[1].rstrip("%ms"))))
    table("Every segment, by source (missed)", x, keys, traces, delivered, missed)
    print()
    table("Streams' first segments, by source (missed)", x, keys, traces, first_delivered,
          first_missed)
    if processed_slack:
        slack = sorted(processed_slack)
        late = sum(v < 0 for v in slack)
        pick = lambda q: slack[min(len(slack) - 1, int(q * len(slack)))]
        print(f"\nprocessed on demand: {len(slack):,} segments, {late} after their deadline; "
              f"time left at arrival: least {slack[0]:.2f} s, 1st percentile {pick(0.01):.2f} s, "
              f"median {pick(0.5):.2f} s")
    if unknown:
        print(f"\nsources not in the table: {dict(unknown)}")


if __name__ == "__main__":
    main(sys.argv[1:])
