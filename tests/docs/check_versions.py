#!/usr/bin/python3
"""The packaging states the version meson.build declares: debian/changelog's
upstream version, the RPM spec's Version and the Spack recipe's version(),
so a release cannot ship a package named for another one."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    project = re.search(r"^\s*version : '([^']+)'", (ROOT / "meson.build").read_text(), re.M).group(1)
    found = {
        "debian/changelog": re.match(r"tandem \(([^)-]+)-[^)]+\)",
                                     (ROOT / "debian" / "changelog").read_text()),
        "contrib/rpm/tandem.spec": re.search(r"^Version:\s*(\S+)",
                                             (ROOT / "contrib" / "rpm" / "tandem.spec").read_text(), re.M),
        "contrib/spack/.../package.py": re.search(
            r'^\s*version\("([^"]+)"', (ROOT / "contrib" / "spack" / "spack_repo" / "tandem" / "packages"
                                        / "tandem" / "package.py").read_text(), re.M),
    }
    bad = 0
    for where, m in found.items():
        version = m.group(1) if m else None
        if version != project:
            print(f"{where}: version {version!r}, but meson.build says {project!r}")
            bad += 1
    print(f"meson.build {project}; {len(found) - bad} of {len(found)} packaging files agree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
