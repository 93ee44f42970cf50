#!/usr/bin/env python3
"""Fails on an import cycle or an upward import in the Python packages.

    contrib/check_python_imports.py [PACKAGE_ROOT]     # default: python/

Every ``import`` statement of every module counts, also those inside
functions: a function-level import only hides a cycle until the function
runs. An edge goes to the module the statement loads (``from tandem import
_arrays`` -> tandem._arrays; ``from tandem._basics import rank`` ->
tandem._basics); modules outside PACKAGE_ROOT are ignored. A package's
implicit import of its parents is not an edge (every submodule would
otherwise form a cycle with its package's __init__).

The layers of python/ (docs/python.md), each importing only those before it:

    core        tandem and tandem._*, tandem.errors, tandem.process_sets
    elastic     tandem.elastic.*          (core)
    torch       tandem.torch.*            (core, elastic)
    tensorflow  tandem.tensorflow.*       (core, elastic)
    keras_common tandem.keras_common.*   (core, elastic): what both Keras share
    keras       tandem.keras.*, tandem.keras2.*  (core, elastic, keras_common, tensorflow, torch)
    shim        horovod.*                 (anything)
    launcher    tandem._horovodrun.*      (core, shim): the horovodrun command, which
                                          reports the shim's Horovod version

Prints each cycle (with the file and line of every edge) and each upward
import, and exits 1 when there is any.
"""

import ast
import pathlib
import sys

LAYERS = [  # (name, module prefix, layers it may import)
    ("elastic", "tandem.elastic", {"core"}),
    ("torch", "tandem.torch", {"core", "elastic"}),
    ("tensorflow", "tandem.tensorflow", {"core", "elastic"}),
    # Keras-version-neutral, imports no Keras: below both Keras modules.
    ("keras_common", "tandem.keras_common", {"core", "elastic"}),
    ("keras", "tandem.keras", {"core", "elastic", "keras_common", "tensorflow", "torch"}),
    ("keras", "tandem.keras2",  # Keras 2 (tf_keras)
     {"core", "elastic", "keras_common", "tensorflow", "torch"}),
    ("shim", "horovod",
     {"core", "elastic", "torch", "tensorflow", "keras_common", "keras", "shim"}),
    ("launcher", "tandem._horovodrun", {"core", "shim", "launcher"}),
    ("core", "tandem", {"core"}),
]


def layer_of(module):
    for name, prefix, allowed in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return name, allowed
    return None, None


def modules_under(root):
    """{dotted module name: path} for every .py file under root, and every
    .py.in (a module the build generates, such as tandem/_config.py)."""
    found = {}
    for path in sorted(list(root.rglob("*.py")) + list(root.rglob("*.py.in"))):
        parts = list(path.relative_to(root).parts)
        parts[-1] = parts[-1].split(".")[0]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            found[".".join(parts)] = path
    return found


def _resolve(name, known):
    """The known module ``name`` loads: itself, or its longest known prefix."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module, path, known):
    """[(target module, line)] for every import statement in the file."""
    if path.name.endswith(".in"):
        return []  # generated from a template: assignments only
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    edges = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, known)
                if target:
                    edges.append((target, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[:len(parent) - (node.level - 1)]
                base = ".".join(parent + ([base] if base else []))
            for alias in node.names:
                full = base + "." + alias.name
                target = full if full in known else _resolve(base, known)
                if target:
                    edges.append((target, node.lineno))
    return [(t, line) for t, line in edges if t != module]


def strongly_connected(graph):
    """Tarjan's strongly connected components of {node: {successor: line}}."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, {})):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            out.append(sorted(component))

    sys.setrecursionlimit(max(1000, 10 * len(graph)))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def a_cycle(graph, component):
    """One cycle through the component's first module, as a list of nodes."""
    members, start = set(component), component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        node = frontier.pop(0)
        for succ in sorted(graph[node]):
            if succ == start:
                return paths[node] + [start]
            if succ in members and succ not in paths:
                paths[succ] = paths[node] + [succ]
                frontier.append(succ)
    return component


def check(root):
    known = modules_under(root)
    graph = {m: {} for m in known}
    for module, path in known.items():
        for target, line in imports_of(module, path, known):
            graph[module].setdefault(target, line)
    problems = []
    for component in strongly_connected(graph):
        if len(component) < 2:
            continue
        cycle = a_cycle(graph, component)
        steps = " -> ".join(
            "%s (%s:%d)" % (b, known[a].relative_to(root), graph[a][b])
            for a, b in zip(cycle, cycle[1:]))
        problems.append("import cycle among %s; e.g. %s -> %s"
                        % (", ".join(component), cycle[0], steps))
    for module in sorted(graph):
        name, allowed = layer_of(module)
        for target, line in sorted(graph[module].items()):
            target_layer, _ = layer_of(target)
            if name and target_layer and target_layer != name and \
                    target_layer not in allowed:
                problems.append("upward import: %s (layer %s) imports %s (layer %s) at %s:%d"
                                % (module, name, target, target_layer,
                                   known[module].relative_to(root), line))
    return problems


def main(argv):
    root = pathlib.Path(argv[1] if len(argv) > 1 else
                        pathlib.Path(__file__).resolve().parents[1] / "python")
    problems = check(root)
    for problem in problems:
        print(problem)
    if problems:
        print("check_python_imports: %d problem(s) under %s; layers: see this script's "
              "docstring and docs/python.md" % (len(problems), root))
        return 1
    print("check_python_imports: no cycle, no upward import under %s (%d modules)"
          % (root, len(modules_under(root))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
