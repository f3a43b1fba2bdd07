#!/usr/bin/env python3
"""Prints the gateway crate's dependencies between top-level modules and fails on a cycle.

A module depends on another when any of its files names `crate::<other>`. CI runs this, so the
layering ARCHITECTURE.md describes (the request path pointing one way down) stays true.
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "gateway", "src")
ROOTS = {"lib.rs", "main.rs"}

def top_module(rel):
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first

graph = {}
for dirpath, _, files in os.walk(SRC):
    for name in files:
        if not name.endswith(".rs"):
            continue
        rel = os.path.relpath(os.path.join(dirpath, name), SRC)
        if rel in ROOTS:
            continue
        module = top_module(rel)
        text = open(os.path.join(dirpath, name), encoding="utf-8").read()
        # Test code may reach anywhere; the layering is about production code.
        text = re.split(r"#\[cfg\(test\)\]\s*mod tests", text)[0]
        deps = graph.setdefault(module, set())
        for other in re.findall(r"\bcrate::([a-z_]+)", text):
            if other != module:
                deps.add(other)

def find_cycle():
    state = {}
    stack = []
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

for module in sorted(graph):
    print(f"{module:10} -> {', '.join(sorted(graph[module])) or '(nothing)'}")
cycle = find_cycle()
if cycle:
    print("import cycle: " + " -> ".join(cycle), file=sys.stderr)
    sys.exit(1)
print("no import cycle between the gateway's modules")
