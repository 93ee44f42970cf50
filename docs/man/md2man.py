#!/usr/bin/python3
"""Renders a manual page written in Markdown (docs/man/NAME.SECTION.md) to
roff, so a page is read on the web as a doc and installed as `man NAME`
from the same text.

The pages use a small subset of Markdown: a title line
`# NAME(SECTION) -- summary`, `##`/`###` headings, paragraphs, `-`/`*`
lists, indented or fenced code blocks, pipe tables and inline `code`,
*emphasis*, **bold** and [links](url). Two comments steer the rendering:

    <!-- man: include ../settings.md "## plugstack.conf arguments" -->
        inlines that section of another page (its body, without its own
        heading): tables of settings live once, in docs/settings.md, and
        the pages show them as they are there.
    <!-- man: skip --> ... <!-- man: end -->
        text for the web only (a link to the included table, say).

A table becomes a list of tagged paragraphs: the first cell is the tag,
the column named meaning/value/description (else the last) the text, and
other non-empty cells follow in parentheses, "header: value".

    md2man.py [--version V] PAGE.md OUT        # writes the roff page OUT
    md2man.py --sections PAGE.md               # prints the expanded Markdown
"""
import argparse
import pathlib
import re
import sys

INCLUDE = re.compile(r'^<!--\s*man:\s*include\s+(\S+)\s+"(#+ [^"]+)"\s*-->\s*$')
TITLE = re.compile(r"^# ([A-Za-z0-9_.-]+)\((\d)\) -- (.+)$")
MAIN_COLUMNS = ("meaning", "value", "description", "what it does")


class PageError(Exception):
    pass


def section_of(path, heading):
    """Body of the section titled `heading` (e.g. '## Runtime (runtime.md)'
    or a prefix of it) in the Markdown file at path."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = path.read_text().splitlines()
    start = None
    for i, line in enumerate(lines):
        if start is None:
            if line.startswith(heading) and (len(line) == len(heading) or line[len(heading)] in " ("):
                start = i + 1
            continue
        m = re.match(r"^(#+) ", line)
        if m and len(m.group(1)) <= level:
            return lines[start:i]
    if start is None:
        raise PageError(f"{path}: no section '{heading}'")
    return lines[start:]


def expand(path, seen=()):
    """The page's lines with includes inlined and web-only text removed."""
    if path in seen:
        raise PageError(f"{path}: includes itself")
    out, skipping = [], False
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if stripped == "<!-- man: skip -->":
            skipping = True
            continue
        if stripped == "<!-- man: end -->":
            skipping = False
            continue
        if skipping:
            continue
        m = INCLUDE.match(stripped)
        if m:
            target = (path.parent / m.group(1)).resolve()
            body = section_of(target, m.group(2))
            # Headings of the included text sit one level below the page's.
            out.extend(body)
            continue
        out.append(line)
    if skipping:
        raise PageError(f"{path}: '<!-- man: skip -->' without '<!-- man: end -->'")
    return out


# ---------------------------------------------------------------- inline text
def escape(text):
    text = text.replace("\\", "\\e")
    return text


def inline(text):
    """Markdown inline markup to roff font changes."""
    out = []
    pos = 0
    pattern = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])"
                         r"|\[([^\]]+)\]\(([^)]+)\)|<!--.*?-->")
    for m in pattern.finditer(text):
        out.append(escape(m.string[pos:m.start()]))
        code, bold, em, link_text, _url = m.groups()
        if code is not None:
            out.append("\\fB" + escape(code).replace("-", "\\-") + "\\fR")
        elif bold is not None:
            out.append("\\fB" + inline(bold) + "\\fR")
        elif em is not None:
            out.append("\\fI" + inline(em) + "\\fR")
        elif link_text is not None:
            out.append(inline(link_text))
        pos = m.end()
    out.append(escape(text[pos:]))
    return "".join(out)


def text_line(text):
    """One line of running text; roff takes a leading . or ' as a request."""
    line = inline(text.strip())
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


# ---------------------------------------------------------------- blocks
def split_row(line):
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [c.strip().replace("\\|", "|") for c in cells]


def render_table(rows):
    header, body = rows[0], rows[2:]
    names = [h.lower() for h in header]
    main = next((i for i, n in enumerate(names) if n in MAIN_COLUMNS), len(header) - 1)
    if main == 0:
        main = len(header) - 1
    out = []
    for row in body:
        row = row + [""] * (len(header) - len(row))
        out.append(".TP")
        out.append(text_line(row[0]))
        extra = [f"{header[i]}: {row[i]}" for i in range(1, len(header))
                 if i != main and row[i]]
        text = row[main] if main < len(row) else ""
        if extra:
            text = (text + " " if text else "") + "(" + "; ".join(extra) + ")"
        out.append(text_line(text) if text else "\\&")
    return out


def render(lines, version):
    if not lines or not TITLE.match(lines[0]):
        raise PageError("the first line must be '# NAME(SECTION) -- summary'")
    name, section, summary = TITLE.match(lines[0]).groups()
    out = [f'.TH "{name.upper()}" "{section}" "" "Tandem {version}" "Tandem manual"',
           ".SH NAME", f"{escape(name)} \\- {inline(summary)}"]
    i, para = 1, []

    def flush():
        if para:
            out.append(".PP")
            out.append(text_line(" ".join(para)))  # inline markup may span lines
            para.clear()

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped or (stripped.startswith("<!--") and stripped.endswith("-->")):
            flush()
            i += 1
        elif stripped.startswith("```"):
            flush()
            j = i + 1
            block = []
            while j < len(lines) and not lines[j].strip().startswith("```"):
                block.append(lines[j])
                j += 1
            out.extend(code_block(block))
            i = j + 1
        elif line.startswith("    ") and not para:
            block = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                block.append(lines[i][4:])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            out.extend(code_block(block))
        elif stripped.startswith("#"):
            flush()
            level = len(stripped) - len(stripped.lstrip("#"))
            title = stripped.lstrip("#").strip()
            if level <= 2:
                out.append(f".SH {escape(title.upper())}")
            else:
                out.append(f'.SS "{escape(title)}"')
            i += 1
        elif stripped.startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(split_row(lines[i]))
                i += 1
            if len(rows) < 2 or not all(re.fullmatch(r":?-+:?", c) for c in rows[1]):
                raise PageError(f"table without a header separator near '{stripped}'")
            out.extend(render_table(rows))
        elif re.match(r"^[-*] ", stripped):
            flush()
            item = [stripped[2:]]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip() \
                    and not re.match(r"^[-*] ", lines[i].strip()):
                item.append(lines[i].strip())
                i += 1
            out.append(".IP \\(bu 2")
            out.append(text_line(" ".join(item)))
        else:
            para.append(stripped)
            i += 1
    flush()
    return "\n".join(out) + "\n"


def code_block(block):
    out = [".PP", ".RS 4", ".nf"]
    for b in block:
        b = escape(b).replace("-", "\\-")
        out.append("\\&" + b if b.startswith((".", "'")) else b)
    out += [".fi", ".RE"]
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", default="")
    ap.add_argument("--sections", action="store_true",
                    help="print the page with includes expanded (Markdown), do not render")
    ap.add_argument("page", type=pathlib.Path)
    ap.add_argument("out", type=pathlib.Path, nargs="?")
    args = ap.parse_args(argv)
    try:
        lines = expand(args.page.resolve())
        if args.sections:
            print("\n".join(lines))
            return 0
        if args.out is None:
            ap.error("OUT is required unless --sections")
        args.out.write_text(render(lines, args.version))
    except PageError as e:
        print(f"md2man: {args.page}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
