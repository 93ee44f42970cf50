#!/usr/bin/env python3
"""Fails when a shared object built here would not load in an image whose
glibc is at the floor, or would disturb the program it is loaded into.

    check_glibc_floor.py --floor 2.28 --exports 'tandem_' libtandem.so
    check_glibc_floor.py --floor 2.17 --exports 'tandem_preload_' libtandem-preload.so

Checked, from the ELF file's own tables (readelf):
- every glibc symbol version it needs (GLIBC_x.y) is at most the floor: an
  image with an older glibc stops a program that loads it ("version
  `GLIBC_2.34' not found"), and a preloaded one stops every program;
- it needs no libstdc++, libgcc_s or other library outside glibc (an
  image's libstdc++ may be older than the one built with, and a libpmix
  there pulls libevent built for another glibc);
- every symbol it exports starts with one of the given prefixes: a
  preloaded library's exported `std::` symbols interpose on the program's
  own libstdc++.
"""
import argparse
import re
import subprocess
import sys

GLIBC_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
              "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "ld64.so.2"}


def version_tuple(text):
    return tuple(int(x) for x in text.split("."))


def readelf(*args):
    return subprocess.run(["readelf", "-W", *args], check=True, capture_output=True,
                          text=True, env={"LC_ALL": "C"}).stdout


def check(path, floor, prefixes):
    problems = []
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", readelf("-d", path))
    for lib in needed:
        if lib not in GLIBC_LIBS:
            problems.append("needs %s (only glibc's libraries may be needed)" % lib)
    # Version needs: "  0x0010:   Name: GLIBC_2.34  Flags: none  Version: 5"
    versions = set(re.findall(r"Name: ((?:GLIBC|GLIBCXX|CXXABI|GCC)_[0-9.]+)", readelf("-V", path)))
    for v in sorted(versions):
        name, _, number = v.partition("_")
        if name != "GLIBC":
            problems.append("needs symbol version %s (libstdc++/libgcc must be linked in statically)" % v)
        elif version_tuple(number) > floor:
            users = sorted(set(re.findall(r"\s(\S+)@%s\b" % re.escape(v), readelf("--dyn-syms", path))))
            problems.append("needs %s, above the floor GLIBC_%s: %s" % (
                v, ".".join(map(str, floor)), ", ".join(users) or "?"))
    for line in readelf("--dyn-syms", path).splitlines():
        fields = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(fields) < 8 or not fields[0].rstrip(":").isdigit():
            continue
        bind, ndx, name = fields[4], fields[6], fields[7]
        if ndx == "UND" or bind == "LOCAL":
            continue
        name = name.split("@")[0]
        if not name.startswith(tuple(prefixes)):
            problems.append("exports %s (%s): only %s may be exported" % (name, bind, " ".join(prefixes)))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--floor", required=True, help="highest GLIBC_x.y version allowed, e.g. 2.28")
    ap.add_argument("--exports", action="append", required=True, help="allowed prefix of exported symbols")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    floor = version_tuple(args.floor)
    failed = False
    for path in args.files:
        problems = check(path, floor, args.exports)
        for p in problems[:40]:
            print("%s: %s" % (path, p))
        if len(problems) > 40:
            print("%s: ... %d more" % (path, len(problems) - 40))
        if problems:
            failed = True
        else:
            print("%s: loads with glibc %s and later, needs only glibc, exports only %s" % (
                path, args.floor, " ".join(args.exports)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
