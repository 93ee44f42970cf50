#!/usr/bin/python3
"""The rendered manual pages format without a single groff warning
(`groff -man -ww`): a bad escape or request from docs/man/md2man.py would
otherwise show up as stray text in `man`."""
import subprocess
import sys


def main(pages):
    bad = 0
    for page in pages:
        r = subprocess.run(["groff", "-man", "-ww", "-z", "-Tutf8", page],
                           capture_output=True, text=True)
        if r.returncode != 0 or r.stderr.strip():
            print(f"{page}: groff: {r.stderr.strip() or 'exit status %d' % r.returncode}")
            bad += 1
    print(f"{len(pages)} pages, {bad} with warnings")
    return 1 if bad or not pages else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
