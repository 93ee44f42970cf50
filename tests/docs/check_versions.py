#!/usr/bin/python3
"""The packaging states the version meson.build declares: debian/changelog's
upstream version, the RPM spec's Version, the Spack recipe's version() and
CHANGELOG.md's latest release (the first heading after "Unreleased"), so a
release cannot ship a package named for another one; and CHANGELOG.md dates
that release as debian/changelog does."""
import email.utils
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
# CHANGELOG.md: "## [Unreleased]" first, then "## [VERSION] - YYYY-MM-DD".
CHANGELOG_RELEASE = re.compile(r"^## \[(?!Unreleased\])([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?", re.M)


def changelog_problems(changelog, debian):
    """What is wrong with CHANGELOG.md's headings against debian/changelog's
    top entry: no Unreleased section first, or a release dated otherwise."""
    problems = []
    first = re.search(r"^## (.*)$", changelog, re.M)
    if not first or first.group(1).strip() != "[Unreleased]":
        problems.append("CHANGELOG.md: the first section must be '## [Unreleased]', found %r"
                        % (first.group(1) if first else None))
    release = CHANGELOG_RELEASE.search(changelog)
    trailer = re.search(r"^ -- .+?  (.+)$", debian, re.M)
    if release and trailer:
        date = email.utils.parsedate_to_datetime(trailer.group(1)).date().isoformat()
        if release.group(2) != date:
            problems.append("CHANGELOG.md: [%s] is dated %r, but debian/changelog's entry is %s"
                            % (release.group(1), release.group(2), date))
    return problems


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
        "CHANGELOG.md": CHANGELOG_RELEASE.search((ROOT / "CHANGELOG.md").read_text()),
    }
    bad = 0
    for where, m in found.items():
        version = m.group(1) if m else None
        if version != project:
            print(f"{where}: version {version!r}, but meson.build says {project!r}")
            bad += 1
    problems = changelog_problems((ROOT / "CHANGELOG.md").read_text(),
                                  (ROOT / "debian" / "changelog").read_text())
    for problem in problems:
        print(problem)
    print(f"meson.build {project}; {len(found) - bad} of {len(found)} packaging files agree")
    return 1 if bad or problems else 0


if __name__ == "__main__":
    sys.exit(main())
