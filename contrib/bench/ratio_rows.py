#!/usr/bin/python3
"""One markdown row per table of compare.sh / compare-nodes.sh output: the
series tables of contrib/bench/results/, made from the saved outputs
instead of by hand.

Each row is one table (one rank count and mode of one output), its cells
one ratio column ("vs mpi" unless --ratio names another) at every size of
the table, bold where below 1.0, then the load and steal the script
printed beside that table. A compare.sh output holds one table per rank
count and mode and statistic (each size the best or the median of its
REPEAT runs, as STAT asked); a compare-nodes.sh output holds one per run
and mode and, with REPEAT > 1, the best-of (and with STAT=median the
median-of) tables. --stat best or --stat median keeps only the tables of
that statistic (compare-nodes.sh: only its best-of or median-of tables);
--best is --stat best.

  contrib/bench/ratio_rows.py one-node-1.txt one-node-2.txt one-node-3.txt
  contrib/bench/ratio_rows.py --stat median --sizes 16,64,256,1K,4K,1M nodes-1.txt nodes-2.txt
  contrib/bench/ratio_rows.py --ratio "vs any" --header one-node-1.txt

Rows are labelled by the file's place on the command line ("1", "2", ...)
and, in a compare-nodes.sh output, the run ("1, run 2" or "1, best of 3");
a compare.sh median table's as "1, median of 5".
"""
import argparse
import re
import sys

# The table's own size names (1K, 4M), so that parse_size reads them back.
from compare_table import size_name

UNITS = [("G", 30), ("M", 20), ("K", 10)]


def parse_size(text):
    for suffix, shift in UNITS:
        if text.endswith(suffix):
            return int(text[:-1]) << shift
    return int(text)


def tables(text):
    """Yields (run label, statistic, title, condition, {size: {ratio name:
    value}}); the statistic is "best" or "median", or None for one run."""
    run = None
    run_condition = None
    conditions = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"run (\d+) of \d+: (.*)", line)
        if m:
            run, run_condition = "run " + m.group(1), m.group(2)
            conditions.append(m.group(2))
        m = re.match(r"(best|median) of (\d+) runs per tool", line)
        if m:
            # The runs' conditions, first start to last end, most steal.
            run, run_condition = "%s of %s" % m.groups(), span(conditions)
        if not line.startswith("float32 sum allreduce, "):
            i += 1
            continue
        title = line
        condition = run_condition
        i += 1
        if i < len(lines) and lines[i].startswith("load "):
            condition = lines[i]
            i += 1
        rows, names = [], []
        while i < len(lines) and lines[i].strip() and "below 1.0x:" not in lines[i]:
            f = lines[i].split()
            if f and re.fullmatch(r"\d+[KMG]?", f[0]):
                rows.append(f)
            i += 1
        # The ratio names, in column order, from the lines under the table.
        while i < len(lines) and "below 1.0x:" in lines[i]:
            names.append(lines[i].split(" below 1.0x:")[0].strip())
            i += 1
        values = {}
        for f in rows:
            numbers = [x for x in f[1:] if x != "(time)"]
            ratios = numbers[len(numbers) - len(names):]
            values[parse_size(f[0])] = dict(zip(names, ratios))
        label, stat = run, None
        if run is None:
            # compare.sh: the statistic is in the table's condition line.
            m = re.search(r"; (best|median) of (\d+)", condition or "")
            if m:
                stat = m.group(1)
                label = "%s of %s" % m.groups() if stat == "median" else None
        elif not run.startswith("run "):
            stat = run.split()[0]
        yield label, stat, title, condition, values


def span(conditions):
    """compare-nodes.sh's run lines folded into one of the same form."""
    loads = [re.findall(r"load average ([\d.]+)", c) for c in conditions]
    steals = [float(x) for c in conditions for x in re.findall(r"steal ([\d.]+)%", c)]
    if not loads or not loads[0] or not steals:
        return None
    return "load average %s at the start; load average %s at the end, steal %g%%" % (
        loads[0][0], loads[-1][-1], max(steals))


def load_and_steal(condition):
    """"START-END, STEAL%" (the load average at the start and at the end, the
    steal) from either script's condition line."""
    if not condition:
        return ""
    m = re.search(r"load ([\d.]+) -> ([\d.]+), steal ([\d.]+)%", condition)
    if m:
        return "%s-%s, %s%%" % m.groups()
    m = re.search(r"load average ([\d.]+) .*?load average ([\d.]+) .*?steal ([\d.]+)%", condition)
    if m:
        return "%s-%s, %s%%" % m.groups()
    return ""


def describe(title):
    ranks = re.search(r"(\d+) ranks( on \d+ nodes)?", title)
    mode = "in place" if "IN PLACE" in title else "out of place"
    return "%s, %s" % (ranks.group(0) if ranks else "?", mode)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outputs", nargs="+", help="saved stdout of compare.sh or compare-nodes.sh")
    p.add_argument("--ratio", default="vs mpi", help='ratio column (default "vs mpi")')
    p.add_argument("--stat", choices=("best", "median"),
                   help="only the tables of each size's best or median run (compare-nodes.sh: its summaries)")
    p.add_argument("--best", action="store_const", dest="stat", const="best", help="--stat best")
    p.add_argument("--header", action="store_true", help="print the table's header first")
    p.add_argument("--sizes", help="columns to keep, e.g. 16,64,256,1K,1M (default: every size)")
    args = p.parse_args()

    rows, sizes = [], set()
    for k, path in enumerate(args.outputs, 1):
        for run, stat, title, condition, values in tables(open(path).read()):
            if args.stat and stat != args.stat:
                continue
            if not any(args.ratio in v for v in values.values()):
                continue  # out-of-place tables have no "vs any" or "in/out"
            label = str(k) if run is None else "%d, %s" % (k, run)
            rows.append((label, describe(title), load_and_steal(condition), values))
            sizes.update(values)
    if not rows:
        sys.exit("ratio_rows.py: no table in %s" % " ".join(args.outputs))
    sizes = sorted(sizes)
    if args.sizes:
        sizes = [parse_size(x) for x in args.sizes.split(",")]
    if args.header:
        print("| run | table | %s | load, steal |" % " | ".join(size_name(s) for s in sizes))
        print("|---|---|%s---|" % ("---|" * len(sizes)))
    for label, what, cond, values in rows:
        cells = []
        for s in sizes:
            v = values.get(s, {}).get(args.ratio)
            if v is None:
                cells.append("-")
                continue
            x = float(v)
            cells.append("**%.2fx**" % x if x < 1.0 else "%.2fx" % x)
        print("| %s | %s | %s | %s |" % (label, what, " | ".join(cells), cond))


if __name__ == "__main__":
    main()
