#!/usr/bin/python3
"""Side-by-side table for contrib/bench/compare.sh and compare-nodes.sh.

Reads result files in tandem-bench's column format (size count type redop
time algbw busbw check; '#' lines ignored; a file may hold several runs) and
prints, per size, each tool's best (lowest-time) run as "time (busbw)" (with
--stat median: the median of its runs' times, the busbw scaled to it), plus
ratio columns: a tool's busbw over the best busbw of a reference group. Where
busbw rounds to zero (tiny sizes) the ratio compares times instead (best
reference time / tool time) and the row says "(time)". A failed check in any
run shows as BAD and is never hidden by a better run.

  compare_table.py --title T --col "tandem=DIR/tandem.txt" --col "mpi=DIR/mpi.txt" \\
                   --ratio "ratio=tandem:mpi,gloo"

--ref LABEL=FILE loads a tool that ratios may name without printing its
column (the in-place table compares against the out-of-place runs too).
After the table, one line per ratio names the sizes where it is below 1.0
("below 1.0x: none" when there are none).
"""
import argparse
import os


def load(path, stat="best"):
    """{size: (time, busbw, check)} over the file's runs: the best run's, or
    the median time with the busbw of that time (busbw is bytes over time,
    so it scales inversely). A failed check in any run is kept."""
    runs = {}
    if not os.path.exists(path):
        return {}
    for line in open(path):
        f = line.split()
        if len(f) < 8 or line.startswith("#"):
            continue
        runs.setdefault(int(f[0]), []).append((float(f[4]), float(f[6]), f[7]))
    rows = {}
    for size, rs in runs.items():
        rs.sort(key=lambda r: r[0])
        bad = [r[2] for r in rs if r[2] not in ("ok", "-")]
        if stat == "median":
            n = len(rs)
            t = rs[n // 2][0] if n % 2 else (rs[n // 2 - 1][0] + rs[n // 2][0]) / 2
            bus = rs[0][1] * rs[0][0] / t if t > 0 else rs[0][1]
            check = rs[n // 2][2]
        else:
            t, bus, check = rs[0]
        rows[size] = (t, bus, bad[0] if bad else check)
    return rows


def size_name(b):
    for unit, s in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= s and b % s == 0:
            return f"{b // s}{unit}"
    return str(b)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--title", required=True)
    p.add_argument("--note", action="append", default=[], help="a line printed under the title")
    p.add_argument("--col", action="append", required=True, help="LABEL=FILE")
    p.add_argument("--ref", action="append", default=[], help="LABEL=FILE, not printed")
    p.add_argument("--ratio", action="append", default=[], help="NAME=TOOL:REF[,REF...]")
    p.add_argument("--stat", choices=("best", "median"), default="best",
                   help="per size over a file's runs: the lowest time (default) or the median")
    a = p.parse_args()
    cols = [c.split("=", 1) for c in a.col]
    data = {label: load(path, a.stat) for label, path in cols + [r.split("=", 1) for r in a.ref]}
    ratios = []
    for r in a.ratio:
        name, spec = r.split("=", 1)
        tool, refs = spec.split(":", 1)
        ratios.append((name, tool, refs.split(",")))
    sizes = sorted(set().union(*[data[label].keys() for label, _ in cols]))
    print(f"\n{a.title}")
    for note in a.note:
        print(note)
    print("%6s" % "size" + "".join("%20s" % label for label, _ in cols) +
          "".join(" %8s" % name for name, _, _ in ratios))
    below = {name: [] for name, _, _ in ratios}
    for s in sizes:
        cells = ""
        for label, _ in cols:
            d = data[label]
            cells += "%20s" % (f"{d[s][0]:.1f} ({d[s][1]:.2f})" + ("" if d[s][2] in ("ok", "-") else " BAD")
                               if s in d else "-")
        by_time = False
        out = ""
        for name, tool, refs in ratios:
            have = [data[ref][s] for ref in refs if s in data.get(ref, {})]
            mine = data.get(tool, {}).get(s)
            if not have or not mine:
                out += " %8s" % "-"
                continue
            if mine[1] < 0.01 or max(h[1] for h in have) == 0:
                by_time = True
                ratio = min(h[0] for h in have) / mine[0]
            else:
                ratio = mine[1] / max(h[1] for h in have)
            out += " %8.2f" % ratio
            if ratio < 1.0:
                below[name].append(f"{size_name(s)} ({ratio:.2f})")
        print("%6s" % size_name(s) + cells + out + (" (time)" if by_time else ""))
    for name, _, _ in ratios:
        print(f"  {name} below 1.0x: " + (" ".join(below[name]) if below[name] else "none"))


if __name__ == "__main__":
    main()
