#!/usr/bin/python3
"""Every option and variable is documented in one place, and every place
that shows one agrees with the code:

- every TANDEM_*/HOROVOD_* environment variable the code, the scripts or the
  packaging read or set (string literals and shell expansions in engine/,
  plugin/, tools/, python/, contrib/, tests/e2e/, etc/, debian/; scripts
  without a suffix by their #! line) has a row in
  docs/settings.md, and every row there is still used;
- every such variable a manual page (docs/man/*.md) names is a row there;
- the engine's table of settings (engine/common/settings_table.h) and the
  tables of docs/settings.md agree: every declared variable (and its Horovod
  name) has a row, one with a default column showing the declared default
  when it has one; every variable in a table with a default column (the
  engine's) is declared; the others (set by the plugin, read by the Python
  package, the preload, the scripts) are in tables without one;
- the plugstack.conf keys of plugin/config.cc, the values of --horovod
  (plugin/mode.h) and the Meson options (meson_options.txt) are the ones
  docs/settings.md lists;
- every installed tool has a manual page, listed in docs/meson.build, whose
  OPTIONS table names exactly the options the tool's source parses;
- every page renders: its includes of docs/settings.md sections resolve
  (the man pages show those tables as they are, docs/man/md2man.py).

Names that are C identifiers of the public header (result codes, enums)
are not settings.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "man"))
import md2man  # noqa: E402  (the renderer the build uses)
sys.path.insert(0, str(ROOT / "tests" / "docs"))
import check_env_reads  # noqa: E402  (reads the table of declarations)

# A string literal ("TANDEM_X", 'TANDEM_X=') or a shell expansion (${TANDEM_X}).
LITERAL = re.compile(r"""["'`]((?:TANDEM|HOROVOD)_[A-Z0-9_]*[A-Z0-9])["'`=]"""
                     r"""|\$[{(]?((?:TANDEM|HOROVOD)_[A-Z0-9_]*[A-Z0-9])""")
NAME = re.compile(r"`((?:TANDEM|HOROVOD)_[A-Z0-9_]+)`")
WORD = re.compile(r"\b((?:TANDEM|HOROVOD)_[A-Z0-9_]*[A-Z0-9])\b")
SCANNED = ("engine", "plugin", "tools", "python", "contrib", "tests/e2e", "etc", "debian")
SUFFIXES = (".c", ".cc", ".h", ".py", ".sh", ".in", ".spec", ".lua", ".tcl")
OPTION = re.compile(r"^-{1,2}[A-Za-z][A-Za-z0-9-]*$")


def header_identifiers():
    text = (ROOT / "include" / "tandem" / "tandem.h").read_text()
    enums = re.findall(r"^\s*(TANDEM_[A-Z0-9_]+)\s*=\s*-?\d", text, re.M)
    defines = re.findall(r"#define\s+(TANDEM_[A-Z0-9_]+)", text)
    return set(enums) | set(defines)


def scanned_files():
    for folder in SCANNED:
        for path in (ROOT / folder).rglob("*"):
            if not path.is_file():
                continue
            script = path.suffix == "" and path.read_bytes()[:2] == b"#!"  # tools/tandem-ch-run, debian/rules
            if path.suffix in SUFFIXES or path.name == "rules" or script:
                yield path


def used_variables():
    found = {}
    skip = header_identifiers()
    for path in scanned_files():
        for groups in LITERAL.findall(path.read_text(errors="replace")):
            name = groups[0] or groups[1]
            if name not in skip:
                found.setdefault(name, path.relative_to(ROOT))
    return found


def table_rows(doc, heading):
    """First cells of the table rows of one section of docs/settings.md."""
    rows = [line for line in md2man.section_of(ROOT / "docs" / "settings.md", heading)
            if line.startswith("|")]
    return [md2man.split_row(r)[0] for r in rows[2:]]


def code_names(cell):
    return [c.split("[")[0].split()[0] for c in re.findall(r"`([^`]+)`", cell)]


class Report:
    def __init__(self):
        self.errors = []

    def differ(self, what, code, code_where, docs, docs_where):
        for name in sorted(set(code) - set(docs)):
            self.errors.append(f"{docs_where}: {what} '{name}' is in {code_where} but not documented: add it")
        for name in sorted(set(docs) - set(code)):
            self.errors.append(f"{docs_where}: {what} '{name}' is documented but {code_where} has none: remove it")


def check_variables(report, doc):
    rows = [line for line in doc.splitlines() if line.startswith("|")]
    documented = {name for row in rows for name in NAME.findall(row)}
    used = used_variables()
    for name in sorted(set(used) - documented):
        report.errors.append(f"docs/settings.md: {name} is used in {used[name]} but not documented: add a row")
    for name in sorted(documented - set(used)):
        report.errors.append(f"docs/settings.md: {name} is documented but no source uses it: remove the row")
    for page in sorted((ROOT / "docs" / "man").glob("*.md")):
        for name in sorted(set(WORD.findall(page.read_text())) - documented):
            report.errors.append(f"docs/man/{page.name}: names {name}, which docs/settings.md does not list")
    return len(used), len(documented)


def declarations():
    """name -> (default text, Tandem name) of every declared setting and alias."""
    text = check_env_reads.TABLE.read_text()
    found = {}
    for name, horovod, default in re.findall(
            r'\{"([A-Z0-9_]+)",\s*(?:nullptr|"([A-Z0-9_]+)"),\s*SettingType::k\w+,\s*"([^"]*)"', text):
        found[name] = (default, name)
        if horovod:
            found[horovod] = (default, name)
    return found


def documented_rows(doc):
    """(names of the first cell, default cell or None, line number, names anywhere in the
    row) of every table row."""
    rows, header = [], None
    for number, line in enumerate(doc.splitlines(), 1):
        if not line.startswith("|"):
            header = None
            continue
        cells = md2man.split_row(line)
        if header is None:
            header = [c.strip().lower() for c in cells]
            continue
        if set(line) <= set("|-: "):
            continue
        column = header.index("default") if "default" in header else None
        default = cells[column].strip() if column is not None and column < len(cells) else None
        rows.append((NAME.findall(cells[0]), default, number, NAME.findall(line)))
    return rows


def check_declarations(report, doc):
    declared = declarations()
    rows = documented_rows(doc)
    with_default = {}
    anywhere = set()
    for names, default, number, in_row in rows:
        anywhere.update(in_row)
        for name in names:
            if default is None:
                continue
            if name not in declared:
                report.errors.append(f"docs/settings.md:{number}: {name} has a default here but is not declared in "
                                     "engine/common/settings_table.h: declare it, or move it to a table of what "
                                     "the plugin, the Python package or the scripts read")
                continue
            with_default.setdefault(name, []).append((default, number))
    for name, (default, tandem_name) in sorted(declared.items()):
        if name not in anywhere:
            report.errors.append(f"docs/settings.md: {name} is declared in engine/common/settings_table.h but "
                                 "not documented: add a row")
            continue
        if not default or name != tandem_name:
            continue
        if name not in with_default:
            report.errors.append(f"docs/settings.md: {name} is declared with default {default} but no row "
                                 "with a default column documents it")
            continue
        for cell, number in with_default[name]:
            if not cell.startswith(f"`{default}`"):
                report.errors.append(f"docs/settings.md:{number}: {name}'s default is `{default}` in "
                                     f"engine/common/settings_table.h, the row says '{cell}'")
    return len(declared)


def check_plugin(report):
    config = (ROOT / "plugin" / "config.cc").read_text()
    keys = re.findall(r'^\s*\{"([a-z_]+)",\s*"', config, re.M)
    report.differ("plugstack key", keys, "plugin/config.cc",
                  [c.strip("`") for c in table_rows(None, "## plugstack.conf arguments")],
                  "docs/settings.md (plugstack.conf arguments)")
    mode = re.search(r'kModeValues\s*=\s*"([^"]*)"', (ROOT / "plugin" / "mode.h").read_text())
    values = [v.strip() for v in mode.group(1).split(",")] if mode else []
    rows = table_rows(None, "## srun / sbatch / salloc option")
    documented = []
    for row in rows:
        m = re.search(r"--horovod\[=([^\]]*)\]", row)
        if m:
            documented += [v for v in m.group(1).replace("\\", "").split("|")]
    report.differ("--horovod value", values, "plugin/mode.h (kModeValues)", documented,
                  "docs/settings.md (srun / sbatch / salloc option)")


def check_meson_options(report):
    options = re.findall(r"^option\('([a-z0-9_]+)'", (ROOT / "meson_options.txt").read_text(), re.M)
    documented = [c.strip("`") for c in table_rows(None, "## Meson options")]
    report.differ("Meson option", options, "meson_options.txt", documented, "docs/settings.md (Meson options)")


def installed_tools():
    text = (ROOT / "tools" / "meson.build").read_text()
    tools = set()
    for chunk in text.split("executable(")[1:]:
        m = re.match(r"'(tandem-[\w-]+)'", chunk)
        if m and "install : true" in chunk[:600]:
            tools.add(m.group(1))
    # Scripts: install_data() into bindir, under their rename or their own names.
    for chunk in text.split("install_data(")[1:]:
        call = chunk.split("\n\n")[0]
        if "bindir" not in call:
            continue
        renamed = re.findall(r"rename : '(tandem-[\w-]+|horovodrun)'", call)
        tools |= set(renamed or re.findall(r"'(tandem-[\w-]+)'", call))
    return tools


# A tool whose options are parsed in the Python package, not under tools/.
TOOL_SOURCES = {"horovodrun": [ROOT / "python" / "tandem" / "_horovodrun" / "flags.py"]}


def tool_options(tool):
    """Options the tool's sources parse: whole string literals that look like
    options, and getopt() option strings."""
    found = set()
    for path in list((ROOT / "tools").iterdir()) + TOOL_SOURCES.get(tool, []):
        stem = path.name.split(".")[0]
        if path.parent.name == "tools" and stem != tool and not stem.startswith(tool + "-"):
            continue
        text = path.read_text(errors="replace")
        found |= {m for m in re.findall(r'"(-{1,2}[A-Za-z][A-Za-z0-9-]*)"', text)}
        for spec in re.findall(r'getopt\s*\([^"]*"([^"]+)"', text):
            found |= {"-" + c for c in spec if c.isalnum()}
    return found


def page_options(lines):
    """Options named in the first column of the page's OPTIONS table."""
    in_options, found = False, set()
    for line in lines:
        if line.startswith("## "):
            in_options = line.strip() == "## OPTIONS"
        elif in_options and line.startswith("|"):
            cell = md2man.split_row(line)[0]
            found |= {name for name in code_names(cell) if OPTION.match(name)}
    return found


def check_pages(report):
    man = ROOT / "docs" / "man"
    build = (ROOT / "docs" / "meson.build").read_text()
    listed = set(re.findall(r"'([\w-]+\.\d)'", build))
    pages = {}
    for page in sorted(man.glob("*.md")):
        name = page.name[:-3]
        if name not in listed:
            report.errors.append(f"docs/man/{page.name}: not in docs/meson.build's man_pages: it would not be installed")
        try:
            lines = md2man.expand(page.resolve())
            md2man.render(lines, "check")
        except md2man.PageError as e:
            report.errors.append(f"docs/man/{page.name}: {e}")
            lines = None
        pages[name] = lines
    for name in sorted(listed - set(pages)):
        report.errors.append(f"docs/meson.build: man page {name} has no docs/man/{name}.md")
    for tool in sorted(installed_tools()):
        if tool + ".1" not in pages:
            report.errors.append(f"docs/man/{tool}.1.md: {tool} is installed (tools/meson.build) but has no manual page")
            continue
        lines = pages[tool + ".1"]
        if lines is None:
            continue  # does not render: reported above
        report.differ("option", tool_options(tool), f"tools/{tool}*", page_options(lines),
                      f"docs/man/{tool}.1.md (OPTIONS)")


def main():
    doc = (ROOT / "docs" / "settings.md").read_text()
    report = Report()
    used, documented = check_variables(report, doc)
    declared = check_declarations(report, doc)
    check_plugin(report)
    check_meson_options(report)
    check_pages(report)
    for line in report.errors:
        print(line)
    print(f"{used} variables used, {documented} documented, {declared} declared by the engine; "
          f"{len(installed_tools())} tools with manual pages checked")
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main())
