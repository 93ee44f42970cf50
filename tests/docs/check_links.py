#!/usr/bin/python3
"""Every relative link in the project's pages resolves, and nothing in them
points outside the tree.

Pages: README.md, CONTRIBUTING.md, CHANGELOG.md, docs/**/*.md and
contrib/bench/results/*.md. For each markdown link or reference definition
outside code: a web or mail address is left alone; any other target must
be a path inside the tree (not absolute, not climbing above the root) that
exists, and a "#anchor" on a markdown page must match one of its headings
as GitHub makes their ids (lower case, punctuation dropped, spaces to
hyphens, "-1", "-2" for repeats). Prose and inline code must not name a
path that climbs above the root (`../shared/...`) or this machine's
working folders (`/work/`), since a reader of the tree has neither.
Prints one line per problem and exits non-zero if there is any.

  tests/docs/check_links.py              # the project's pages
  tests/docs/check_links.py FILE...      # only these pages (for a test)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
# A path climbing out of the tree, or this machine's working folders.
OUTSIDE = re.compile(r"(?<![\w./-])((?:\.\./)+[\w.+-]+(?:/[\w.+-]*)*|/work/[\w./+-]*)")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def pages():
    found = []
    for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md"):
        if os.path.exists(os.path.join(ROOT, name)):
            found.append(name)
    for top in ("docs",):
        for folder, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(".md"):
                    found.append(os.path.relpath(os.path.join(folder, f), ROOT))
    results = os.path.join(ROOT, "contrib", "bench", "results")
    if os.path.isdir(results):
        found += sorted(os.path.join("contrib", "bench", "results", f)
                        for f in os.listdir(results) if f.endswith(".md"))
    return found


def prose_lines(text):
    """(line number, line) outside fenced and indented code blocks."""
    fenced = False
    previous_blank = True
    in_indented = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        blank = not line.strip()
        # An indented block starts after a blank line; list items' own
        # continuation lines are indented too, so only 4+ spaces after a
        # blank line that follows no list item count as code.
        if not blank and line.startswith("    ") and (previous_blank or in_indented) \
                and not re.match(r"\s*([-*+]|\d+\.)\s", line):
            in_indented = in_indented or previous_blank
            if in_indented:
                previous_blank = False
                continue
        elif not blank:
            in_indented = False
        previous_blank = blank
        yield number, line


def slug(heading):
    """GitHub's id for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_ANCHORS = {}


def anchors(path, cache=_ANCHORS):
    """The heading ids of PATH, read once per page."""
    if path in cache:
        return cache[path]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    ids, seen = set(), {}
    lines = list(prose_lines(text))
    for k, (number, line) in enumerate(lines):
        for name in HTML_ANCHOR.findall(line):
            ids.add(name)
        m = re.match(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
        heading = m.group(2) if m else None
        if heading is None and k + 1 < len(lines) and line.strip() and "|" not in line:
            nxt_number, nxt = lines[k + 1]
            if nxt_number == number + 1 and re.match(r"^\s{0,3}(=+|-+)\s*$", nxt):
                heading = line.strip()
        if heading is None:
            continue
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        ids.add(base if n == 0 else "%s-%d" % (base, n))
    cache[path] = ids
    return ids


def check_target(page, number, target, problems):
    if not target or EXTERNAL.match(target):
        return
    where = "%s:%d: %s" % (page, number, target)
    path, _, anchor = target.partition("#")
    if path.startswith("/"):
        problems.append("%s: an absolute path; link inside the tree with a relative path" % where)
        return
    here = os.path.dirname(os.path.join(ROOT, page))
    resolved = os.path.normpath(os.path.join(here, path)) if path else os.path.join(ROOT, page)
    if os.path.relpath(resolved, ROOT).startswith(".."):
        problems.append("%s: points outside the tree" % where)
        return
    if not os.path.exists(resolved):
        problems.append("%s: no such file %s" % (where, os.path.relpath(resolved, ROOT)))
        return
    if anchor and resolved.endswith(".md") and os.path.isfile(resolved):
        if anchor not in anchors(resolved):
            problems.append("%s: %s has no heading with the id #%s" %
                            (where, os.path.relpath(resolved, ROOT), anchor))


def check_page(page, problems):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        text = f.read()
    for number, line in prose_lines(text):
        m = REFERENCE.match(line)
        if m:
            check_target(page, number, m.group(1), problems)
        spans = [s.group(2) for s in CODE_SPAN.finditer(line)]
        outside_code = CODE_SPAN.sub("", line)
        for target in INLINE_LINK.findall(outside_code):
            check_target(page, number, target, problems)
        for piece in [INLINE_LINK.sub("", outside_code)] + spans:
            for path in OUTSIDE.findall(piece):
                if not path.startswith("/"):
                    here = os.path.dirname(os.path.join(ROOT, page))
                    inside = os.path.relpath(os.path.normpath(os.path.join(here, path)), ROOT)
                    if not inside.startswith(".."):
                        continue  # climbs, but stays in the tree (../settings.md)
                problems.append("%s:%d: %s: names a path outside the tree" % (page, number, path))


def main(argv):
    targets = argv[1:] or pages()
    problems = []
    for page in targets:
        check_page(os.path.relpath(os.path.abspath(page), ROOT) if argv[1:] else page, problems)
    for p in problems:
        print(p)
    if problems:
        print("check_links.py: %d problem(s) in %d page(s)" % (len(problems), len(targets)))
        return 1
    print("check_links.py: every link in %d pages resolves" % len(targets))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
