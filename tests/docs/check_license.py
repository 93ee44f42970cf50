#!/usr/bin/python3
"""Every file that states Tandem's license states the same one: the text in
LICENSE, debian/copyright (each Files: paragraph and the License: paragraph
they refer to), the RPM spec's License: (and its `%license LICENSE`, so the
text ships in the RPM), the Spack recipe's license() and meson.build's
project(license). A packager reads whichever is nearest to hand, and two that
differ leave a site unable to say under which terms it runs the software.

LICENSE is recognised by its exact text (its SHA-256), so an edited or
truncated text fails as well as another license does.

    tests/docs/check_license.py [ROOT]     # default: the tree this file is in
"""
import hashlib
import pathlib
import re
import sys

# SHA-256 of a license text as published -> its SPDX identifier (which is
# also Debian's short name for these). The Apache text is the one Apache
# publishes at apache.org/licenses/LICENSE-2.0.txt, which Debian ships as
# /usr/share/common-licenses/Apache-2.0.
KNOWN_TEXTS = {
    "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30": "Apache-2.0",
}
# Licenses whose text Debian keeps in /usr/share/common-licenses: the
# License: paragraph of debian/copyright points there instead of copying it.
DEBIAN_COMMON = {"Apache-2.0", "Artistic", "BSD", "CC0-1.0", "GPL-2", "GPL-3", "LGPL-2.1",
                 "LGPL-3", "MPL-1.1", "MPL-2.0"}

SPACK_RECIPE = pathlib.Path("contrib", "spack", "spack_repo", "tandem", "packages", "tandem",
                            "package.py")
SPEC = pathlib.Path("contrib", "rpm", "tandem.spec")


def license_text(root):
    """(SPDX id, problem): LICENSE's license, or why it has none."""
    path = root / "LICENSE"
    if not path.is_file():
        return None, "LICENSE: missing"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest not in KNOWN_TEXTS:
        return None, ("LICENSE: not a license text this check knows (sha256 %s): it must be the "
                      "published text, unedited; a new license is one line in KNOWN_TEXTS" % digest)
    return KNOWN_TEXTS[digest], None


def debian_copyright(root):
    """{where: license} for each Files: paragraph, plus problems with the
    stand-alone License: paragraphs."""
    text = (root / "debian" / "copyright").read_text()
    found, problems, standalone = {}, [], {}
    for para in re.split(r"\n\s*\n", text.strip()):
        fields = dict(re.findall(r"^([A-Za-z-]+):[ \t]*(.*)$", para, re.M))
        if "License" not in fields:
            continue
        name = fields["License"].strip()
        if "Files" in fields:
            found["debian/copyright (Files: %s)" % fields["Files"].strip()] = name
        else:
            standalone[name] = para
    if not any(where == "debian/copyright (Files: *)" for where in found):
        problems.append("debian/copyright: no `Files: *` paragraph")
    for name in sorted(set(found.values())):
        para = standalone.get(name)
        if para is None:
            problems.append("debian/copyright: no stand-alone `License: %s` paragraph" % name)
        elif name in DEBIAN_COMMON and "/usr/share/common-licenses/%s" % name not in para:
            problems.append("debian/copyright: `License: %s` does not point at "
                            "/usr/share/common-licenses/%s" % (name, name))
    return found, problems


def rpm_spec(root):
    text = (root / SPEC).read_text()
    found = {"%s (License:, line %d)" % (SPEC, text.count("\n", 0, m.start()) + 1): m.group(1)
             for m in re.finditer(r"^License:\s*(.+?)\s*$", text, re.M)}
    problems = [] if found else ["%s: no License: line" % SPEC]
    # The main package's %files: from `%files` to the next section.
    sections = "files|package|description|changelog|prep|build|install|check|pre|post|preun|postun"
    files = re.search(r"^%%files\s*\n(.*?)(?=^%%(?:%s)\b|\Z)" % sections, text, re.M | re.S)
    if not files or not re.search(r"^%license\s+(\S+\s+)*LICENSE(\s|$)", files.group(1), re.M):
        problems.append("%s: the main package's %%files has no `%%license LICENSE`" % SPEC)
    return found, problems


def single(root, rel, pattern, what):
    m = re.findall(pattern, (root / rel).read_text(), re.M)
    if len(m) != 1:
        return {}, ["%s: %d %s, expected one" % (rel, len(m), what)]
    return {"%s (%s)" % (rel, what): m[0]}, []


def main(argv):
    root = pathlib.Path(argv[1]).resolve() if len(argv) > 1 else \
        pathlib.Path(__file__).resolve().parents[2]
    expected, problem = license_text(root)
    problems = [problem] if problem else []
    found = {}
    for part in (debian_copyright(root), rpm_spec(root),
                 single(root, SPACK_RECIPE, r'^\s*license\(\s*"([^"]+)"', "license()"),
                 single(root, pathlib.Path("meson.build"), r"^\s*license\s*:\s*'([^']+)'",
                        "project license")):
        found.update(part[0])
        problems += part[1]
    if expected:
        for where, name in found.items():
            if name != expected:
                problems.append("%s says %r, but LICENSE is %s" % (where, name, expected))
    for p in problems:
        print("check-license: " + p)
    if problems:
        return 1
    print("check-license: LICENSE is %s, and so say %d statements in debian/copyright, the RPM "
          "spec, the Spack recipe and meson.build" % (expected, len(found)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
