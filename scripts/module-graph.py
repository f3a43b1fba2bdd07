#!/usr/bin/env python3
"""The gateway crate's layering, checked: which top-level module may import which, and no cycle
between the files of one folder.

A module depends on another when any of its files names `crate::<other>` outside a comment (or,
inside a folder, `super::<sibling>`). ALLOWED below is ARCHITECTURE.md's map as a table: each module and the modules
below it that it may import. CI runs this script; an import the table does not allow fails it,
naming the file, the line and the edge. An edge missing from the table is a design question (who
owns the code?), not a line to add here.

Test code (`#[cfg(test)] mod tests`) may reach anywhere; the layering is about production code.
The entry points (lib.rs, main.rs) and the feature-gated doors for fuzzing and benchmarks may
import anything.

Usage: python3 scripts/module-graph.py          (prints the graph, exit 1 on a violation)
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "gateway", "src")
ROOTS = {"lib.rs", "main.rs"}
ENTRY = {"fuzzing", "bench"}

# Top to bottom, as ARCHITECTURE.md draws it: a module may import only what is listed for it.
ALLOWED = {
    # The front doors: surfaces ask the pipeline; they admit callers through clients.
    "server": {
        "clients", "config", "persist", "pipeline", "request", "runtime", "trace", "metrics",
    },
    # Beside the path: installs logs and traces from the configuration.
    "telemetry": {"config", "metrics", "trace"},
    # The decisions: everything an answer is made of.
    "pipeline": {
        "breaker", "cache", "canonical_url", "config", "merge", "metrics", "providers", "reader",
        "persist", "request", "rolling", "search_result", "searxng", "shared", "trace", "upstream",
    },
    # The whole configuration, put together from the sections each owner reads.
    "config": {"clients", "env", "persist", "providers", "reader", "runtime", "shared"},
    # Who may search and how much.
    "clients": {"env", "metrics", "persist", "rolling", "shared"},
    # Upstreams report facts, never policy.
    "providers": {"env", "metrics", "request", "upstream"},
    "searxng": {"metrics", "request", "search_result", "upstream"},
    # Reading a page directly: facts only (fetch, address policy, extraction).
    "reader": {"env", "metrics", "request", "upstream"},
    "merge": {"providers", "search_result"},
    # The tier replicas share: typed operations on bytes.
    "shared": {"env", "metrics", "trace"},
    "search_result": {"canonical_url"},
    # The file STATE_DIR keeps across restarts: plain entries, filled and read by their owners.
    "persist": {"env"},
    "breaker": {"metrics"},
    # Below everything.
    "cache": set(),
    "canonical_url": set(),
    "env": set(),
    "metrics": set(),
    "request": set(),
    "rolling": set(),
    "trace": {"upstream"},
    # The scheduler (RUNTIME) and which worker a thread is: the upstream client keeps one pool per
    # worker.
    "runtime": set(),
    "upstream": {"runtime"},
}

USE = re.compile(r"\bcrate::([a-z_]+)")
SUPER = re.compile(r"\bsuper::([a-z_]+)")


def production_text(path):
    """The file without its test module and without comment lines (docs may name any module)."""
    text = open(path, encoding="utf-8").read()
    text = re.split(r"#\[cfg\(test\)\](?:\s*#\[[^\]]*\])*\s*mod tests", text)[0]
    return "\n".join("" if line.lstrip().startswith("//") else line for line in text.splitlines())


def top_module(rel):
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first


def second_module(rel):
    """The file's module inside its top-level folder (`server/auth.rs` -> `auth`), or None for the
    folder's mod.rs and for files of top-level modules that are single files."""
    parts = rel.split(os.sep)
    if len(parts) < 2 or parts[1] == "mod.rs":
        return None
    second = parts[1]
    return second[:-3] if second.endswith(".rs") else second


def find_cycle(graph):
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                return stack[stack.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


graph = {}
folders = {}
violations = []
for dirpath, _, files in os.walk(SRC):
    for name in sorted(files):
        if not name.endswith(".rs"):
            continue
        path = os.path.join(dirpath, name)
        rel = os.path.relpath(path, SRC)
        if rel in ROOTS:
            continue
        module = top_module(rel)
        text = production_text(path)
        deps = graph.setdefault(module, set())
        for number, line in enumerate(text.splitlines(), 1):
            for other in USE.findall(line):
                if other == module:
                    continue
                deps.add(other)
                if module in ENTRY:
                    continue
                allowed = ALLOWED.get(module)
                if allowed is None:
                    violations.append(f"{rel}: module {module!r} is not in the table of allowed edges")
                elif other not in allowed:
                    violations.append(
                        f"{rel}:{number}: {module} -> {other} is not an allowed edge "
                        f"({module} may import: {', '.join(sorted(allowed)) or 'nothing'}): {line.strip()}"
                    )
        # Files of one folder: `super::x` from a file directly in the folder names a sibling.
        second = second_module(rel)
        depth = len(rel.split(os.sep))
        if second is not None and module not in ENTRY:
            siblings = folders.setdefault(module, {}).setdefault(second, set())
            for other in SUPER.findall(text) if depth == 2 else []:
                if other != second:
                    siblings.add(other)
            for other in re.findall(r"\bcrate::" + module + r"::([a-z_]+)", text):
                if other != second:
                    siblings.add(other)

for module in sorted(graph):
    print(f"{module:13} -> {', '.join(sorted(graph[module])) or '(nothing)'}")

for module in sorted(folders):
    files = folders[module]
    known = set(files)
    inner = {f: {d for d in deps if d in known} for f, deps in files.items()}
    cycle = find_cycle(inner)
    if cycle:
        violations.append(f"{module}/: import cycle between its files: " + " -> ".join(cycle))

cycle = find_cycle(graph)
if cycle:
    violations.append("import cycle between top-level modules: " + " -> ".join(cycle))

if violations:
    print("\n".join(violations), file=sys.stderr)
    sys.exit(1)
print("every import is an allowed edge; no import cycle between modules or between the files of a folder")
