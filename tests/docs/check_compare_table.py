#!/usr/bin/python3
"""contrib/bench/compare_table.py, which prints compare.sh's and
compare-nodes.sh's tables, takes per size a tool's best run or (--stat
median) its median run, scales busbw to the median time, keeps a failed
check of any run, and computes the ratio columns from what it printed.
Exits non-zero naming the first line that differs."""
import os
import sys
import tempfile

from tool_lines import differs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "contrib", "bench", "compare_table.py")

# size count type redop time algbw busbw check, several runs per file.
# 1M: tandem 400/300/500 (median 400), mpi 290/600/700 (median 600).
# 4K: four tandem runs 10/12/14/20 (median 13), mpi 11/11/30/30 (median 20.5).
# 8: busbw rounds to 0, so the ratio compares times; one tandem run is BAD.
TANDEM = """# tandem-bench
8 2 float32 sum 3.0 0.00 0.00 ok
4096 1024 float32 sum 10.0 0.41 0.41 ok
1048576 262144 float32 sum 400.0 2.62 2.62 ok
8 2 float32 sum 2.0 0.00 0.00 ok
4096 1024 float32 sum 12.0 0.34 0.34 ok
1048576 262144 float32 sum 300.0 3.50 3.50 ok
8 2 float32 sum 5.0 0.00 0.00 BAD
4096 1024 float32 sum 14.0 0.29 0.29 ok
1048576 262144 float32 sum 500.0 2.10 2.10 ok
4096 1024 float32 sum 20.0 0.20 0.20 ok
"""
MPI = """8 2 float32 sum 4.0 0.00 0.00 -
4096 1024 float32 sum 11.0 0.37 0.37 ok
1048576 262144 float32 sum 290.0 3.62 3.62 ok
8 2 float32 sum 6.0 0.00 0.00 -
4096 1024 float32 sum 30.0 0.14 0.14 ok
1048576 262144 float32 sum 600.0 1.75 1.75 ok
4096 1024 float32 sum 11.0 0.37 0.37 ok
1048576 262144 float32 sum 700.0 1.50 1.50 ok
4096 1024 float32 sum 30.0 0.14 0.14 ok
"""

CASES = [
    (
        [],
        [
            "     8      2.0 (0.00) BAD          4.0 (0.00)     2.00 (time)",
            "    4K         10.0 (0.41)         11.0 (0.37)     1.11",
            "    1M        300.0 (3.50)        290.0 (3.62)     0.97",
            "  vs mpi below 1.0x: 1M (0.97)",
        ],
    ),
    (
        ["--stat", "median"],
        [
            "     8      3.0 (0.00) BAD          5.0 (0.00)     1.67 (time)",
            "    4K         13.0 (0.32)         20.5 (0.20)     1.59",
            "    1M        400.0 (2.62)        600.0 (1.75)     1.50",
            "  vs mpi below 1.0x: none",
        ],
    ),
]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, text in (("tandem", TANDEM), ("mpi", MPI)):
            paths[name] = os.path.join(tmp, name + ".txt")
            with open(paths[name], "w") as f:
                f.write(text)
        for args, want in CASES:
            # The title and the header line come first.
            error = differs(TOOL, ["--title", "t", "--col", "tandem=" + paths["tandem"],
                                   "--col", "mpi=" + paths["mpi"], "--ratio", "vs mpi=tandem:mpi",
                                   *args], want, skip=2)
            if error:
                print(error)
                return 1
    print("compare_table.py: %d cases as expected" % len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
