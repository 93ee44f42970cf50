#!/usr/bin/python3
"""Source comments state a rule and its reason; the numbers behind a rule live
in docs/ (and the measurement results it links) and a comment cites them by
page and section. This check reads every comment under engine/, plugin/,
include/, tools/, python/, tests/, contrib/, etc/ and examples/ and in the
top meson.build and meson_options.txt, and fails, naming file:line and the
line, on a comment that holds:

- an issue number: "issue 23", "issues 12 and 14", "bug 3", "PR 5", "review
  round 7", or "#23" after a blank or a parenthesis. An issue is closed and
  forgotten; the rule it produced is what the reader needs. Another
  project's bug, written owner/project#N or project#N, is a reference a
  reader can follow and is not an issue number of this tree.
- a date: 2026-11-25, 2026-11, "Nov 2026", "25 November 2026". A date says
  when someone looked, not what holds. A year alone (a paper's) is not one.
- a measured figure. Where a measurement ends and a rule's constant begins:
  * a number with a time unit (ns, us, µs, ms, s, min, h) is a measurement
    when it has a fraction ("1.3 ms"), ends a range ("253-297 us"), is an
    estimate ("~10 ms", "about 50 us", "in under 3 minutes"), or stands in a
    sentence that reports or compares runs ("took", "measured", "against",
    "vs", "faster", "slower", "median", "best of", "instead of", "under
    load", "on this VM", "was", "were", "gave", "got"). "Polls every 100 ms",
    "a 30 s timeout", "10 ms, doubling to 1 s" are a rule's constants: the
    code holds the same number and the comment says why, so they pass.
  * a rate (GB/s, GiB/s, MB/s, Gbps, Gbit/s, Mbps, ops/s, img/s, samples/s)
    is always a measurement: a rule is written in bytes and seconds, a
    throughput is what a run got.
  * a speedup: a factor with a fraction ("1.4x"), a "+" ("1.27x+"), ending a
    range ("2-3x"), or followed by faster/slower/speedup ("3x faster").
    "2 x this per local rank" (an integer factor of a size) is a rule.
  * a percentage that is a measurement by the same tests as a time ("3.5%",
    "10-30%", "3% faster"). "Closer than 5% is the same speed" is a rule.
  Sizes (128 KiB pieces, 4 MiB, 64 bytes) are never measurements: they are
  the pieces, limits and thresholds the code holds.
- a file it names that is not in the tree: "foo.cc", "engine/x/foo.h",
  "docs/x.md", "DESIGN.md". A name resolves against the repository root,
  against the commenting file's folder, as the tail of a path in the tree
  ("transport/tcp/wire.h"), or, for a bare file name, against any file of
  that name (git ls-files; a walk where there is no git). Not checked: names
  inside <...> (system headers); under /usr, /etc, /proc, /sys, /dev, /tmp,
  /opt, /run, ~ or $VAR; under build/ (what the build makes); with a glob,
  a "..." or a capitalised placeholder (FILE, DIR, NAME, ...); followed by
  "(" (a call, "optimizer.build(...)"); a web address without its scheme
  ("apache.org/licenses/..."); and the names in EXTERNAL, other projects'
  files that a comment names as theirs. A leading ../ or ./ (a docs page's
  link) is dropped and the rest resolved as the tail of a path.
- a section of a docs page that the page does not have: docs/tcp.md, "Piece
  by congestion control" must be the start of one of tcp.md's headings
  (#...) or run-in bold headings (**Title.**), compared without case.

A sentence broken over lines is read whole: consecutive comment lines are
joined before they are matched. Comments are C and C++ // and /* */ (.cc,
.h, .c, .cu, .map), # comments in Python, shell, meson.build,
meson_options.txt, .spec, .toml and .yaml files, and Python docstrings
(module, class and function). String literals are skipped, so a "#" or "//"
inside a string is not a comment.

ALLOWED lists the exceptions, each with its file, its pattern and why.
SELF_TEST lists lines that must fail and lines that must pass; the check
runs them first, so a pattern that stops matching fails the check itself.

  tests/docs/check_comments.py            # the tree; non-zero and a list if any
  tests/docs/check_comments.py FILE...    # only those files (paths from the root)
"""
import ast
import io
import os
import pathlib
import re
import subprocess
import sys
import tokenize

ROOT = pathlib.Path(__file__).resolve().parents[2]
FOLDERS = ("engine", "plugin", "include", "tools", "python", "tests", "contrib", "etc", "examples")
TOP_FILES = ("meson.build", "meson_options.txt")

# (file, regular expression over the comment text, why it is allowed).
ALLOWED = [
    ("tests/docs/check_comments.py", r".",
     "this check's own docstring and comments spell out what it rejects"),
    ("tests/unit/shm/staged_step_test.cc", r"0\.3 (?:ns|us)\b|~79 us",
     "the test's own inputs (a barrier cost, a work rate) and the step time they give"),
    ("contrib/bench/compare_table.py", r'"below 1\.0x: none"',
     "the line the script prints, quoted"),
    ("contrib/horovod-suite.sh", r'"1 passed in 0\.52s"',
     "pytest's summary line, quoted as the script parses it"),
]

# Files of other projects that comments name as theirs (Horovod's, Slurm's,
# the kernel's), or that a program makes at run time: not in this tree by
# design.
EXTERNAL = {
    # Horovod's tree: the frontends follow its behaviour and say where it is.
    "horovod/_keras/callbacks.py": "Horovod's", "horovod/_keras/elastic.py": "Horovod's",
    "runner/common/util/hosts.py": "Horovod's", "horovod/runner/common/util/hosts.py": "Horovod's",
    "horovod/runner/elastic/worker.py": "Horovod's",
    "test/parallel/test_torch.py": "Horovod's", "test/utils/common.py": "Horovod's",
    "test/single/test_torch_elastic.py": "Horovod's", "test_torch.py": "Horovod's",
    "test/parallel/test_adasum_pytorch.py": "Horovod's",
    "test/parallel/test_adasum_tensorflow.py": "Horovod's",
    "test_adasum_pytorch.py": "Horovod's", "test_adasum_tensorflow.py": "Horovod's",
    "test_tensorflow.py": "Horovod's", "test_tensorflow_process_sets.py": "Horovod's",
    "test_tensorflow2_keras.py": "Horovod's", "elastic_common.py": "Horovod's",
    "elastic_tensorflow_main.py": "Horovod's", "elastic_tensorflow_keras_main.py": "Horovod's",
    "elastic_tensorflow2_main.py": "Horovod's",
    "examples/tensorflow2/tensorflow2_mnist.py": "Horovod's", "tensorflow2_mnist.py": "Horovod's",
    "examples/keras/keras_mnist_advanced.py": "Horovod's", "keras_mnist_advanced.py": "Horovod's",
    # Slurm's, NCCL's and CUDA's headers, which the build finds on the system.
    "spank.h": "Slurm's", "slurm/spank.h": "Slurm's", "slurm_version.h": "Slurm's",
    "src/common/read_config.h": "Slurm's source", "nccl.h": "NCCL's",
    "nccl/include/nccl.h": "the NCCL wheel's", "cuda_runtime_api.h": "CUDA's",
    "include/cuda_runtime_api.h": "CUDA's",
    # Files other tools read or write: meson's test log, an OCI bundle's
    # config, Spack's site configuration.
    "testlog.json": "meson's", "config.json": "the OCI bundle's", "packages.yaml": "Spack's",
    # Names in usage lines: the user's script, a run's output files, a path
    # pattern.
    "train.py": "the user's script", "one-node-1.txt": "a run's output",
    "one-node-2.txt": "a run's output", "one-node-3.txt": "a run's output",
    "nodes-1.txt": "a run's output", "nodes-2.txt": "a run's output",
    "folder/file.h": "a pattern",
}
# Capitalised words a usage line puts where the reader writes a name.
PLACEHOLDERS = {"FILE", "DIR", "NAME", "PATH", "TO", "START", "N", "X", "WHAT"}

MONTHS = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|"
          r"Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
NUM = r"(?<![\w.])\d+(?:[.,]\d+)*"
TIME_UNIT = r"\s?(?:ns|us|µs|ms|s|sec|secs|seconds?|min|mins|minutes?|h|hours?)(?![\w/])"
RATE_UNIT = (r"\s?(?:[KMGT]i?B/s|[KMGT]bit/s|[KMGT]bps|[KMGT]b/s|ops/s|img/s|images/s|"
             r"samples/s|msgs?/s|tokens/s|steps/s|B/s)(?!\w)")
# Words that make a sentence a report of a run rather than a rule.
MEASURING = re.compile(
    r"\b(?:took|measured|measurement|against|vs|versus|faster|slower|median|the mean|best of|"
    r"instead of|on this (?:VM|machine|host|node)|under load|at load|speed-?up|was|were|"
    r"gave|got)\b", re.I)
# Written before a number: it is an estimate of what a run showed.
APPROXIMATE = re.compile(r"(?:~|≈|\b(?:about|around|roughly|nearly|almost|in under)\s)\s?$", re.I)
# Written before a number: the number ends a range ("253-297 us").
RANGE = re.compile(r"\d(?:\s?(?:-|–|to)\s?)$")

ISSUE = re.compile(
    r"\b(?:issues?|bugs?|tickets?|PRs?|pull requests?)\s*#?\d+(?:\s*(?:,|and|or|/)\s*#?\d+)*\b"
    r"|\b(?:review|session|work) rounds?\s+\d+"
    r"|(?:(?<=\s)|(?<=\()|^)#\d+\b", re.I)
DATE = re.compile(
    r"(?<!\d)20\d\d-[01]\d(?:-[0-3]\d)?(?!\d)"
    rf"|\b{MONTHS}\.?\s+(?:[0-3]?\d(?:st|nd|rd|th)?,?\s+)?20\d\d\b"
    rf"|\b[0-3]?\d(?:st|nd|rd|th)?\s+{MONTHS}\.?,?\s+20\d\d\b")
TIME = re.compile(NUM + TIME_UNIT)
RATE = re.compile(NUM + RATE_UNIT)
TIMES = re.compile(NUM + r"\s?[x×](\+)?(?!\w)(\s+(?:faster|slower|speed-?up|quicker|the speed))?")
PERCENT = re.compile(NUM + r"\s?%")

# A file name as comments write it: a path of word characters, dots, dashes and
# slashes ending in one of these extensions.
FILE_EXT = r"(?:cc|h|c|cu|hpp|cpp|py|sh|md|build|map|txt|in|spec|toml|yaml|json|xml|rst)"
FILE_NAME = re.compile(rf"(?<![\w./$<>*-])((?:\.{{1,2}}/)?[\w][\w.+-]*(?:/[\w.+-]+)*\.{FILE_EXT})"
                       r"(?![\w/*(]|\.\w)")


# ---- comment extraction: each returns [(line, text)] for one file.

def c_comments(text):
    """// and /* */ comments of C and C++; skips strings, chars and raw strings."""
    out = []
    i, n, line = 0, len(text), 1
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append((line, text[i + 2:end]))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end
            for k, part in enumerate(text[i + 2:end].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, end)
            i = end + 2
        elif ch == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                i += 1
                continue
            close = ")" + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            line += text.count("\n", i, end)
            i = end
        elif ch in "\"'":
            if ch == "'" and i > 0 and text[i - 1].isalnum():  # 1'000'000 digit separators
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


def python_comments(text):
    """# comments and docstrings (module, class, function) of Python. A
    template's (.in) bare @NAME@ values become None so that it parses."""
    text = re.sub(r"(?<![\w\"'])@[A-Z_]+@(?![\w\"'])", "None", text)
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string[1:]))
    except (tokenize.TokenError, SyntaxError) as e:
        raise SyntaxError(f"cannot tokenize: {e}") from e
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            first = body[0].lineno
            for k, part in enumerate(body[0].value.value.split("\n")):
                out.append((first + k, part))
    return out


def hash_comments(text, quotes):
    """# comments of shell, meson and the like: a # at a line's start or after a
    blank, outside the given quote characters (a shell's $# and ${#x} are not
    comments). Strings that span lines (meson's ''' and shell's multi-line
    quotes) are followed."""
    out = []
    quote = None
    for lineno, raw in enumerate(text.split("\n"), 1):
        i, n = 0, len(raw)
        while i < n:
            ch = raw[i]
            if quote:
                if raw.startswith(quote, i):
                    i += len(quote)
                    quote = None
                    continue
                i += 2 if ch == "\\" and quote == '"' else 1
                continue
            if ch == "\\":
                i += 2
                continue
            if raw.startswith("'''", i) and "'''" in quotes:
                quote = "'''"
                i += 3
                continue
            if ch in quotes:
                quote = ch
                i += 1
                continue
            if ch == "#" and (i == 0 or raw[i - 1] in " \t;(|&"):
                out.append((lineno, raw[i + 1:]))
                break
            i += 1
    return out


def kind_of(path, text):
    name = path.name
    first = text.split("\n", 1)[0]
    if path.suffix in (".cc", ".h", ".c", ".cu", ".map"):
        return "c"
    if path.suffix == ".py" or name.endswith(".py.in") or (first.startswith("#!") and
                                                          ("python" in first or "@PYTHON@" in first)):
        return "python"
    if name in ("meson.build", "meson_options.txt", "meson.options"):
        return "meson"
    if path.suffix == ".sh" or (first.startswith("#!") and re.search(r"\b(ba)?sh\b", first)):
        return "shell"
    if path.suffix in (".spec", ".toml", ".yaml", ".yml") or name == ".gitignore":
        return "hash"
    return None


def comments(path, text):
    kind = kind_of(path, text)
    if kind == "c":
        return c_comments(text)
    if kind == "python":
        return python_comments(text)
    if kind == "meson":
        return hash_comments(text, ("'",))
    if kind == "shell":
        return hash_comments(text, ("'", '"'))
    if kind == "hash":
        return hash_comments(text, ("'", '"'))
    return []


# ---- what a comment line must not hold.

def sentence_at(text, pos):
    """The sentence of a comment block that holds position pos."""
    begin = max(text.rfind(". ", 0, pos), text.rfind("; ", 0, pos), text.rfind(": ", 0, pos))
    ends = [e for e in (text.find(". ", pos), text.find("; ", pos)) if e >= 0]
    return text[begin + 1:min(ends) if ends else len(text)]


def reported(text, m):
    """Whether the number matched at m reads as a run's result: a fraction, the
    end of a range, an estimate, or in a sentence that measures or compares."""
    number = re.match(r"[\d.,]+", m.group(0)).group(0)
    before = text[:m.start()]
    return ("." in number or RANGE.search(before) or APPROXIMATE.search(before)
            or MEASURING.search(sentence_at(text, m.start())))


def problems(text):
    """What a comment block must not hold, as (position, what, matched text)."""
    found = []
    for m in ISSUE.finditer(text):
        found.append((m.start(), "issue number", m.group(0)))
    for m in DATE.finditer(text):
        found.append((m.start(), "date", m.group(0)))
    for m in RATE.finditer(text):
        found.append((m.start(), "measured rate", m.group(0)))
    for m in TIMES.finditer(text):
        number = re.match(r"[\d.,]+", m.group(0)).group(0)
        if "." in number or m.group(1) or m.group(2) or RANGE.search(text[:m.start()]):
            found.append((m.start(), "measured speedup", m.group(0)))
    for m in TIME.finditer(text):
        if re.fullmatch(r"[\d,]+s", m.group(0)):  # "rank 0s": a plural, not seconds
            continue
        if reported(text, m):
            found.append((m.start(), "measured time", m.group(0)))
    for m in PERCENT.finditer(text):
        if reported(text, m):
            found.append((m.start(), "measured percentage", m.group(0)))
    return found


def tree_files():
    """Every file of the tree, by its path from the root."""
    try:
        names = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], check=True,
                               capture_output=True, text=True).stdout.split("\0")
        names = [n for n in names if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
    if not names:  # no git (a release tarball), or a tree git does not track
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                 if p.is_file() and ".git" not in p.parts and "build" not in p.parts[:1]]
    # Files the build makes from a .in template resolve by either name.
    return sorted(set(names) | {n[:-3] for n in names if n.endswith(".in")})


def missing_files(text, where, files, basenames):
    """The file names in a comment block that name nothing in the tree."""
    found = []
    for m in FILE_NAME.finditer(text):
        name = m.group(1)
        start = m.start(1)
        before = text[:start]
        if before.rstrip().endswith("<") or "..." in name or "*" in name:
            continue
        if re.search(r"(?:^|[\s(`'\"])(?:/usr|/etc|/proc|/sys|/dev|/tmp|/opt|/run|~|\$\{?\w+\}?)/?[\w./-]*$",
                     before):
            continue
        if name in EXTERNAL or name.startswith("build/"):
            continue
        if set(re.split(r"[^A-Za-z]+", name)) & PLACEHOLDERS:
            continue
        if re.fullmatch(r"[\d.]+", name.rsplit(".", 1)[0]):  # a version number, "2.13.0"
            continue
        if re.match(r"[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}/", name):  # a web address, "apache.org/..."
            continue
        rel = os.path.normpath(os.path.join(os.path.dirname(where), name))
        plain = re.sub(r"^(?:\.\.?/)+", "", os.path.normpath(name))  # "../x.md": a link's tail
        if plain in files or rel in files or ("/" not in plain and plain in basenames):
            continue
        if "/" in plain and any(f.endswith("/" + plain) for f in files):
            continue
        found.append((start, "file not in the tree", name))
    return found


# docs/PAGE.md, "Section" (also docs/PAGE.md "Section", (docs/PAGE.md, section "Section")).
SECTION_CITE = re.compile(r'(docs/[\w/.-]+\.md)[,:]?\s*\(?(?:section\s+)?"([^"]+)"')


def page_sections(page, cache={}):  # noqa: B006 (a cache kept across calls)
    """The headings of a docs page, lower case: # headings and run-in bold ones."""
    if page not in cache:
        try:
            text = (ROOT / page).read_text(encoding="utf-8")
        except OSError:
            text = None
        titles = None
        if text is not None:
            titles = [m.group(1) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", text, re.M)]
            titles += [m.group(1) for m in re.finditer(r"^\s*(?:[-*]\s+)?\*\*(.+?)\*\*", text, re.M)]
            titles = [t.replace("`", "").lower() for t in titles]
        cache[page] = titles
    return cache[page]


def missing_sections(text):
    """Sections a comment block cites that their docs page does not have (a
    page that is missing is missing_files's)."""
    found = []
    for m in SECTION_CITE.finditer(text):
        titles = page_sections(m.group(1))
        want = m.group(2).replace("`", "").lower().rstrip(".")
        if titles is not None and not any(t.startswith(want) for t in titles):
            found.append((m.start(2), f"no such section of {m.group(1)}", m.group(2)))
    return found


# Comment texts that must fail (what, text) and that must pass: run first, so
# that a pattern that stops matching makes the check fail instead of passing
# everything.
SELF_TEST_FAIL = [
    ("issue number", "picks the path (issue 23: slower from 16 MiB)"),
    ("issue number", "as in #12, the store answers"),
    ("date", "on the VM of 2026-11-29 the direct path won"),
    ("date", "measured in Nov 2026 on the local cluster"),
    ("measured time", "a 1 MiB allreduce 293-308 us by 128 KiB pieces"),
    ("measured time", "the staged path took 2.1 ms"),
    ("measured time", "a vDSO call costs ~1 us"),
    ("measured time", "Tandem's 800 us against Open MPI's"),
    ("measured rate", "the kernel folds at 33-41 GB/s"),
    ("measured speedup", "every cell 1.27x+ by best"),
    ("measured speedup", "training 2-3x slower when bound"),
    ("measured percentage", "512 KiB beat 256 KiB by 10-30% from 1 MiB"),
    ("measured percentage", "a vDSO call per look was 9% of an allreduce"),
    ("file not in the tree", "picks the algorithm (allreduce_choice.cc)"),
    ("file not in the tree", "the design (DESIGN.md, binding)"),
]
SELF_TEST_PASS = [
    "128 KiB pieces keep each piece inside the window",
    "polls every 100 ms; a 30 s timeout; 10 ms, doubling to 1 s",
    "closer than 5% are the same speed",
    "staging: 2 x this per local rank",
    "the local rank 0s broadcast it",
    "Open MPI 4.1.4 has crashed here (open-mpi/ompi#10734)",
    "Gradual warmup (Goyal et al. 2017)",
    "the algorithm of collectives/model.h, transport/tcp/wire.h and <sys/uio.h>",
    "tandem-bind --topology FILE.xml, python train.py, optimizer.build(vars)",
    "the text at apache.org/licenses/LICENSE-2.0.txt; a page's link ../settings.md",
]


def self_test(files, basenames):
    """Problems with the check itself: a SELF_TEST line judged wrongly."""
    wrong = []
    where = "engine/self_test.cc"
    for what, text in SELF_TEST_FAIL:
        got = {w for _, w, _ in problems(text) + missing_files(text, where, files, basenames)}
        if what not in got:
            wrong.append(f"self-test: {text!r} should fail as {what}, got {sorted(got)}")
    for text in SELF_TEST_PASS:
        got = problems(text) + missing_files(text, where, files, basenames)
        if got:
            wrong.append(f"self-test: {text!r} should pass, got {got}")
    return wrong


def allowed(where, text):
    return any(where == f and re.search(p, text) for f, p, _ in ALLOWED)


def blocks(lines):
    """Consecutive comment lines joined into one text each, so that a sentence
    broken over lines is read whole: [(text, [(offset, line, line text)])]."""
    out = []
    for line, raw in lines:
        part = re.sub(r"^\s*(?:[*/#!]+(?=\s|$))?\s*", "", raw).rstrip()
        if out and out[-1][1][-1][1] == line - 1:
            text, parts = out[-1]
            joined = text + " " + part if text else part
            parts.append((len(text) + 1 if text else 0, line, raw))
            out[-1] = (joined, parts)
        else:
            out.append((part, [(0, line, raw)]))
    return out


def where_in(parts, pos):
    for offset, line, raw in reversed(parts):
        if offset <= pos:
            return line, raw
    return parts[0][1], parts[0][2]


def sources(args, files):
    if args:
        return args
    return [f for f in files
            if (f.split("/", 1)[0] in FOLDERS or f in TOP_FILES) and (ROOT / f).is_file()]


def main(argv):
    files = set(tree_files())
    basenames = {f.rsplit("/", 1)[-1] for f in files}
    wrong = self_test(files, basenames)
    for line in wrong:
        print(line)
    bad = len(wrong)
    checked = 0
    for where in sources(argv[1:], files):
        path = ROOT / where
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        try:
            lines = comments(path, text)
        except SyntaxError as e:
            print(f"{where}: {e}")
            bad += 1
            continue
        if kind_of(path, text) is None:
            continue
        checked += 1
        for text, parts in blocks(lines):
            found = (problems(text) + missing_files(text, where, files, basenames)
                     + missing_sections(text))
            for pos, what, matched in sorted(found):
                line, raw = where_in(parts, pos)
                if allowed(where, raw.strip()):
                    continue
                print(f"{where}:{line}: {what} {matched!r}: {raw.strip()}")
                bad += 1
    print(f"check_comments: {checked} files read, {bad} comment problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
