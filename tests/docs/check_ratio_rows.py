#!/usr/bin/python3
"""contrib/bench/ratio_rows.py, which makes the series rows of
contrib/bench/results/, reads both scripts' outputs as they print
them: the ratio columns by name (after the "(time)" marks of tiny sizes),
bold below 1.0, sizes written 1K/4M, the load and steal beside each table,
compare-nodes.sh's runs and best-of and median-of tables, and compare.sh's
median tables (STAT=median). Exits non-zero naming the first row that
differs."""
import os
import sys
import tempfile

from tool_lines import differs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "contrib", "bench", "ratio_rows.py")

ONE_NODE = """
float32 sum allreduce, 4 ranks, OUT OF PLACE (send != recv), time per call in us (busbw GB/s)
load 3.88 -> 6.00, steal 0.2%, CPUs busy 100% (of 2), 2158 s; binding: x; best of 2
  size              tandem             mpi cma            mpi copy   vs mpi
     8       1756.0 (0.00)       2500.0 (0.00)       2468.0 (0.00)     1.41 (time)
    1K          0.4 (2.83)          0.4 (2.33)          0.6 (1.75)     0.93
    4M       1520.4 (2.76)       6494.2 (0.65)       4605.4 (0.91)     3.03
  vs mpi below 1.0x: 1K (0.93)

float32 sum allreduce, 4 ranks, IN PLACE (send == recv), time per call in us (busbw GB/s)
load 3.88 -> 6.00, steal 0.2%, CPUs busy 100% (of 2), 2158 s; binding: x; best of 2
  size           tandem -i          mpi cma -i         mpi copy -i   vs mpi   vs any   in/out
     8       1716.0 (0.00)       2500.0 (0.00)       2595.9 (0.00)     1.46     1.44     1.02 (time)
    1K          0.3 (2.93)          0.5 (2.14)          0.6 (1.76)     1.37     0.99     1.03
    4M        956.4 (4.39)       1291.5 (3.25)      17140.0 (0.24)     1.35     1.35     1.59
  vs mpi below 1.0x: none
  vs any below 1.0x: 1K (0.99)
  in/out below 1.0x: none
"""

NODES = """
run 1 of 2: load average 3.35 3.43 3.15 at the start; load average 2.49 3.16 3.07 at the end, steal 0% of CPU time during the run

float32 sum allreduce, 2 ranks on 2 nodes over TCP, time (us); ratio, OUT OF PLACE (both sides)
  size          tandem         mpi tcp   vs mpi
    16       9.0 (0.00)      8.4 (0.00)     0.93 (time)
    1M     449.0 (2.33)    402.0 (2.61)     0.89
  vs mpi below 1.0x: 16 (0.93) 1M (0.89)

run 2 of 2: load average 2.49 3.16 3.07 at the start; load average 2.29 2.99 3.02 at the end, steal 1% of CPU time during the run

float32 sum allreduce, 2 ranks on 2 nodes over TCP, time (us); ratio, OUT OF PLACE (both sides)
  size          tandem         mpi tcp   vs mpi
    16       8.0 (0.00)      9.0 (0.00)     1.12 (time)
    1M     380.0 (2.76)    402.0 (2.61)     1.06
  vs mpi below 1.0x: none

best of 2 runs per tool and size:

float32 sum allreduce, 2 ranks on 2 nodes over TCP, time (us); ratio, OUT OF PLACE (both sides)
  size          tandem         mpi tcp   vs mpi
    16       8.0 (0.00)      8.4 (0.00)     1.05 (time)
    1M     380.0 (2.76)    402.0 (2.61)     1.06
  vs mpi below 1.0x: none

median of 2 runs per tool and size:

float32 sum allreduce, 2 ranks on 2 nodes over TCP, time (us); ratio, OUT OF PLACE (both sides)
  size          tandem         mpi tcp   vs mpi
    16       8.5 (0.00)      8.7 (0.00)     1.02 (time)
    1M     414.5 (2.53)    402.0 (2.61)     0.97
  vs mpi below 1.0x: 1M (0.97)
"""

# compare.sh with STAT="best median": each table twice, the statistic in
# its condition line.
ONE_NODE_MEDIAN = """
float32 sum allreduce, 2 ranks, OUT OF PLACE (send != recv), time per call in us (busbw GB/s)
load 0.50 -> 2.00, steal 0.1%, CPUs busy 90% (of 2), 600 s; binding: x; best of 5
  size              tandem             mpi cma            mpi copy   vs mpi
   256          0.2 (1.34)          0.2 (1.40)          0.2 (1.23)     0.96
    1M        100.0 (10.5)        120.0 (8.74)        200.0 (5.24)     1.20
  vs mpi below 1.0x: 256 (0.96)

float32 sum allreduce, 2 ranks, OUT OF PLACE (send != recv), time per call in us (busbw GB/s)
load 0.50 -> 2.00, steal 0.1%, CPUs busy 90% (of 2), 600 s; binding: x; median of 5
  size              tandem             mpi cma            mpi copy   vs mpi
   256          0.3 (1.10)          0.3 (1.00)          0.3 (0.98)     1.10
    1M        110.0 (9.53)        130.0 (8.07)        210.0 (4.99)     1.18
  vs mpi below 1.0x: none
"""

CASES = [
    (
        ONE_NODE,
        ["--header"],
        [
            "| run | table | 8 | 1K | 4M | load, steal |",
            "|---|---|---|---|---|---|",
            "| 1 | 4 ranks, out of place | 1.41x | **0.93x** | 3.03x | 3.88-6.00, 0.2% |",
            "| 1 | 4 ranks, in place | 1.46x | 1.37x | 1.35x | 3.88-6.00, 0.2% |",
        ],
    ),
    (
        ONE_NODE,
        ["--ratio", "vs any"],
        ["| 1 | 4 ranks, in place | 1.44x | **0.99x** | 1.35x | 3.88-6.00, 0.2% |"],
    ),
    (
        ONE_NODE,
        ["--ratio", "in/out", "--sizes", "4M,8"],
        ["| 1 | 4 ranks, in place | 1.59x | 1.02x | 3.88-6.00, 0.2% |"],
    ),
    (
        NODES,
        [],
        [
            "| 1, run 1 | 2 ranks on 2 nodes, out of place | **0.93x** | **0.89x** | 3.35-2.49, 0% |",
            "| 1, run 2 | 2 ranks on 2 nodes, out of place | 1.12x | 1.06x | 2.49-2.29, 1% |",
            "| 1, best of 2 | 2 ranks on 2 nodes, out of place | 1.05x | 1.06x | 3.35-2.29, 1% |",
            "| 1, median of 2 | 2 ranks on 2 nodes, out of place | 1.02x | **0.97x** | 3.35-2.29, 1% |",
        ],
    ),
    (
        NODES,
        ["--stat", "median"],
        ["| 1, median of 2 | 2 ranks on 2 nodes, out of place | 1.02x | **0.97x** | 3.35-2.29, 1% |"],
    ),
    (
        ONE_NODE_MEDIAN,
        [],
        [
            "| 1 | 2 ranks, out of place | **0.96x** | 1.20x | 0.50-2.00, 0.1% |",
            "| 1, median of 5 | 2 ranks, out of place | 1.10x | 1.18x | 0.50-2.00, 0.1% |",
        ],
    ),
    (
        ONE_NODE_MEDIAN,
        ["--stat", "median"],
        ["| 1, median of 5 | 2 ranks, out of place | 1.10x | 1.18x | 0.50-2.00, 0.1% |"],
    ),
    (
        ONE_NODE_MEDIAN,
        ["--best"],
        ["| 1 | 2 ranks, out of place | **0.96x** | 1.20x | 0.50-2.00, 0.1% |"],
    ),
    (
        NODES,
        ["--best"],
        ["| 1, best of 2 | 2 ranks on 2 nodes, out of place | 1.05x | 1.06x | 3.35-2.29, 1% |"],
    ),
]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for k, (text, args, want) in enumerate(CASES):
            path = os.path.join(tmp, "out%d.txt" % k)
            with open(path, "w") as f:
                f.write(text)
            error = differs(TOOL, [*args, path], want)
            if error:
                print(error)
                return 1
    print("ratio_rows.py: %d cases as expected" % len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
