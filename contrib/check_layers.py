#!/usr/bin/python3
"""The engine's folders point one way (docs/design.md, "The engine").

Reads every #include "folder/file.h" between engine/ folders and fails on

* a cycle between folders (a folder's files include another's, whose files,
  directly or through others, include the first's), naming each edge of the
  cycle with one include that makes it;
* an include that points up the layers below, or one of the bans that
  docs/style.md states (collectives never name a concrete
  transport; the runtime never names sockets), naming the file and line.

A subfolder is its own node (transport/tcp), and counts as its parent
(transport) for cycles, so that "shm -> transport/tcp -> shm" and
"shm -> collectives -> transport -> shm/..." are both found.

    contrib/check_layers.py [ENGINE_DIR]     # default: engine/ beside contrib/
"""

import pathlib
import re
import sys

# Layer of each folder: a file may include folders of its own layer or below,
# never above. Siblings of one layer must still not form a cycle.
LAYERS = {
    "common": 0,
    # Plain C beside the engine: the glibc floor's replacements, linked into
    # libtandem, and the preload shim, a library of its own that includes
    # nothing of the engine (docs/containers.md).
    "compat": 0, "preload": 0,
    "bootstrap": 1,
    # Elastic jobs' membership service and the bootstrap of a generation: a
    # way of joining the job, on bootstrap's level (docs/elastic.md).
    "elastic": 1,
    "transport": 2, "transport/memory": 2, "transport/tcp": 2, "shm": 2, "gpu": 2,
    "collectives": 3, "communicator": 3,
    "runtime": 4,
    "api": 5,
}

# (folder that includes, folder it must not include, why)
BANS = [
    ("collectives", "transport/tcp", "algorithms use the transport interface, never a concrete one"),
    ("collectives", "transport/memory", "algorithms use the transport interface, never a concrete one"),
    ("collectives", "shm", "algorithms use the transport interface, never a concrete one"),
    ("runtime", "transport/tcp", "the runtime depends on collectives, never on sockets"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path, engine):
    return path.parent.relative_to(engine).as_posix()


def top(folder):
    return folder.split("/")[0]


def includes(engine):
    """(from folder, to folder, 'file:line -> include') for every include
    between two folders of the engine."""
    found = []
    for path in sorted(engine.rglob("*")):
        if path.suffix not in (".h", ".cc", ".c") or not path.is_file():
            continue
        src = folder_of(path, engine)
        text = path.read_text(errors="replace")
        for m in INCLUDE.finditer(text):
            target = engine / m.group(1)
            if not target.is_file():
                continue  # a system, public or generated header
            dst = folder_of(target, engine)
            if dst == src:
                continue
            line = text.count("\n", 0, m.start()) + 1
            found.append((src, dst, "%s:%d includes %s" % (path.relative_to(engine.parent),
                                                           line, m.group(1))))
    return found


def find_cycle(edges):
    """One cycle in the graph {node: {node: evidence}}, as a node list, or None."""
    color = {}
    stack = []

    def visit(node):
        color[node] = "grey"
        stack.append(node)
        for nxt in sorted(edges.get(node, {})):
            if color.get(nxt) == "grey":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in color:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        color[node] = "black"
        return None

    for node in sorted(edges):
        if node not in color:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def main(argv):
    engine = pathlib.Path(argv[1]) if len(argv) > 1 else \
        pathlib.Path(__file__).resolve().parent.parent / "engine"
    problems = []
    found = includes(engine)

    for src, dst, where in found:
        if src not in LAYERS or dst not in LAYERS:
            unknown = src if src not in LAYERS else dst
            problems.append("engine/%s is in no layer: add it to LAYERS in %s (%s)"
                            % (unknown, pathlib.Path(__file__).name, where))
            continue
        if LAYERS[dst] > LAYERS[src]:
            problems.append("%s: %s (layer %d) points up to %s (layer %d)"
                            % (where, src, LAYERS[src], dst, LAYERS[dst]))
        for banned_src, banned_dst, why in BANS:
            if src == banned_src and dst == banned_dst:
                problems.append("%s: %s must not include %s: %s" % (where, src, dst, why))

    # Cycles, at two granularities: folders, and top folders (transport/tcp
    # counted as transport).
    for name, key in (("folder", lambda f: f), ("top-level folder", top)):
        edges = {}
        for src, dst, where in found:
            a, b = key(src), key(dst)
            if a != b:
                edges.setdefault(a, {}).setdefault(b, where)
        cycle = find_cycle(edges)
        if cycle:
            steps = ["  %s -> %s: %s" % (a, b, edges[a][b]) for a, b in zip(cycle, cycle[1:])]
            problems.append("%s cycle %s:\n%s" % (name, " -> ".join(cycle), "\n".join(steps)))

    for p in problems:
        print("check-layers: " + p)
    if not problems:
        print("check-layers: %d includes between engine folders, no cycle, every one "
              "pointing down" % len(found))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
