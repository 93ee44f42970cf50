#!/usr/bin/python3
"""Every TANDEM_*/HOROVOD_* environment variable the code reads or sets is
listed in docs/settings.md, and every variable listed there still exists.

Variables are found as string literals in the C/C++/Python sources and shell
scripts (engine/, plugin/, tools/, python/, contrib/, etc/, tests/e2e/), so a
new getenv("TANDEM_X") without a line in the docs fails this test. Names that
are C identifiers of the public header (result codes, enums) are not settings.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
# A string literal ("TANDEM_X", 'TANDEM_X=') or a shell expansion (${TANDEM_X}).
LITERAL = re.compile(r"""["'`]((?:TANDEM|HOROVOD)_[A-Z0-9_]*[A-Z0-9])["'`=]"""
                     r"""|\$\{?((?:TANDEM|HOROVOD)_[A-Z0-9_]*[A-Z0-9])""")
NAME = re.compile(r"`((?:TANDEM|HOROVOD)_[A-Z0-9_]+)`")


def header_identifiers():
    text = (ROOT / "include" / "tandem" / "tandem.h").read_text()
    enums = re.findall(r"^\s*(TANDEM_[A-Z0-9_]+)\s*=\s*-?\d", text, re.M)
    defines = re.findall(r"#define\s+(TANDEM_[A-Z0-9_]+)", text)
    return set(enums) | set(defines)


def used_variables():
    found = {}
    skip = header_identifiers()
    for folder in ("engine", "plugin", "tools", "python", "contrib", "etc", "tests/e2e"):
        for path in (ROOT / folder).rglob("*"):
            if not path.is_file():
                continue
            script = path.suffix == "" and path.read_bytes()[:2] == b"#!"  # tools/tandem-ch-run
            if path.suffix not in (".c", ".cc", ".h", ".py", ".sh", ".in") and not script:
                continue
            for groups in LITERAL.findall(path.read_text(errors="replace")):
                name = groups[0] or groups[1]
                if name not in skip:
                    found.setdefault(name, path.relative_to(ROOT))
    return found


def main():
    doc = (ROOT / "docs" / "settings.md").read_text()
    # Any name in backquotes in a table row counts (rows may list several).
    rows = [line for line in doc.splitlines() if line.startswith("|")]
    documented = {name for row in rows for name in NAME.findall(row)}
    used = used_variables()
    missing = sorted(set(used) - documented)
    stale = sorted(documented - set(used))
    for name in missing:
        print(f"docs/settings.md: {name} is used in {used[name]} but not documented: add a row")
    for name in stale:
        print(f"docs/settings.md: {name} is documented but no source uses it: remove the row")
    print(f"{len(used)} variables used, {len(documented)} documented")
    return 1 if missing or stale else 0


if __name__ == "__main__":
    sys.exit(main())
