#!/usr/bin/env python3
"""The gateway's layering, checked where the compiler cannot: between the modules inside each of
the product's crates, and the crates' own dependencies against the order ARCHITECTURE.md draws.

The compiler already refuses a lower crate naming a higher one (the crates are
core < upstreams < engine < http < the binary, and Cargo allows no cycle). What it cannot see:

1. Which crate each crate depends on: CRATES below lists the crates each may use; a
   `[dependencies]` entry on another product crate that the table does not allow fails.
2. Edges between the top-level modules inside one crate (`server` and `clients` in the http crate,
   `search` and `fleet` in the engine, ...). A file depends on a module of its crate when its
   production code names it: `crate::x`, grouped imports (`use crate::{x, y::z}`), and `super::x`
   from a file directly in a folder or from a folder's `mod.rs` (whose `super` is the crate's root
   module there). MODULES lists, per crate, what each top-level module may import.
3. Re-exports that hide an edge: a `pub use gateway_<crate>::...` in a product crate's library
   would let the crates above name a lower crate's item through a middle crate; each crate names
   what it uses at its source. Only the binary's facade (`crates/gateway/src/lib.rs`,
   `config/mod.rs`) re-exports, for the public API.
4. No import cycle between the files of one folder.

Test code (`#[cfg(test)] mod tests`, `tests.rs`) may reach anywhere; the layering is about
production code. An edge missing from a table is a design question (who owns the code?), not a
line to add here.

Usage: python3 scripts/module-graph.py          (prints the graph, exit 1 on a violation)
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")

# Bottom to top; a crate may depend on the crates listed for it.
CRATES = {
    "core": set(),
    "upstreams": {"core"},
    "engine": {"core", "upstreams"},
    "http": {"core", "upstreams", "engine"},
    "gateway": {"core", "upstreams", "engine", "http"},
}
PACKAGE = {"core": "gateway-core", "upstreams": "gateway-upstreams", "engine": "gateway-engine",
           "http": "gateway-http", "gateway": "searxng-gateway"}

# Inside each crate: a top-level module may import only what is listed for it.
MODULES = {
    "core": {
        "breaker": {"metrics"},
        "cache": set(),
        "canonical_url": set(),
        "env": set(),
        "metrics": set(),
        "persist": {"env"},
        "request": {"metrics"},
        "rolling": set(),
        "runtime": set(),
        "search_result": {"canonical_url"},
        # The tier replicas share: typed operations on bytes.
        "shared": {"env", "metrics", "trace"},
        "trace": {"upstream"},
        # The upstream client keeps one pool per worker.
        "upstream": {"runtime", "metrics"},
    },
    "upstreams": {
        # Upstreams report facts, never policy; each on its own.
        "providers": set(),
        "searxng": set(),
        "reader": set(),
        "reranker": set(),
        "merge": {"providers"},
        "breaker_keys": {"providers", "searxng"},
    },
    "engine": {
        "settings": set(),
        # What upstream facts mean for breakers: the one policy every floor below applies.
        "breaker_signals": set(),
        # The versioned, compressed JSON blobs kept outside the process.
        "packed": set(),
        # The SearXNG instances, their engines and the probes of blocked ones.
        "searxng_pool": {"settings", "breaker_signals"},
        # A search's fan-out: it calls the pool's instances and the premium providers.
        "search": {"settings", "breaker_signals", "searxng_pool"},
        # Reading pages: a client's premium budget is the search's `Premium`.
        "read": {"settings", "breaker_signals", "search", "packed"},
        # Whole sites: crawls and batch scrapes read their pages as any read.
        "crawl": {"settings", "read", "search", "packed"},
        # What replicas share through the Redis tier: a miss, the breakers, the quota windows.
        "fleet": {"search", "searxng_pool"},
        # What the operator sees.
        "operator": {"settings", "search", "searxng_pool"},
        # The engine itself: every part built from the settings and held together.
        "engine": {"settings", "breaker_signals", "searxng_pool", "search", "read", "fleet",
                   "operator", "crawl"},
    },
    "http": {
        "settings": {"clients", "oauth"},
        "gateway": {"settings"},
        "clients": set(),
        # MCP's authorization: tokens stand for the clients' keys.
        "oauth": {"clients"},
        "server": {"clients", "gateway", "settings", "oauth"},
    },
    "gateway": {
        "config": set(),
        "telemetry": {"config"},
        # The feature-gated doors for the fuzz targets and the benchmarks.
        "fuzzing": set(),
        "bench": set(),
    },
}
ROOTS = {"lib.rs", "main.rs"}
FACADE = {os.path.join("gateway", "src", "lib.rs"), os.path.join("gateway", "src", "config", "mod.rs")}

CRATE_PATH = re.compile(r"\bcrate::([a-z_]+)")
GROUPED = re.compile(r"\bcrate::\{([^}]*)\}", re.S)
SUPER = re.compile(r"\bsuper::([a-z_]+)")
SUPER_GROUPED = re.compile(r"\bsuper::\{([^}]*)\}", re.S)
REEXPORT = re.compile(r"^\s*pub(?:\([^)]*\))?\s+use\s+(gateway_[a-z_]+)::", re.M)


def production_text(path):
    """The file without its test module and without comment lines (docs may name any module)."""
    if os.path.basename(path) == "tests.rs" or os.sep + "tests" + os.sep in path:
        return ""
    text = open(path, encoding="utf-8").read()
    text = re.split(r"#\[cfg\(test\)\](?:\s*#\[[^\]]*\])*\s*mod tests", text)[0]
    return "\n".join("" if line.lstrip().startswith("//") else line for line in text.splitlines())


def heads(group):
    """The first segment of each path in a grouped import (`a, b::c, d::{e}` -> a, b, d)."""
    depth, part, out = 0, "", []
    for ch in group + ",":
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            name = part.strip().split("::")[0].strip()
            if re.fullmatch(r"[a-z_]+", name) and name not in ("self", "super", "crate"):
                out.append(name)
            part = ""
        else:
            part += ch
    return out


def names_used(text, rel):
    """Top-level modules of the crate a file's production code names."""
    found = set(CRATE_PATH.findall(text))
    for group in GROUPED.findall(text):
        found.update(heads(group))
    parts = rel.split(os.sep)
    # `super::` names a top-level module from a folder's mod.rs, or from a file directly in the
    # crate's src (never: those are top-level modules themselves) — a file `a/b.rs` means `a::`.
    if len(parts) == 2 and parts[1] == "mod.rs":
        found.update(SUPER.findall(text))
        for group in SUPER_GROUPED.findall(text):
            found.update(heads(group))
    found.discard("self")
    return found


def top_module(rel):
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first


def second_module(rel):
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


violations = []

# 1. The crates' dependencies.
for crate, allowed in CRATES.items():
    manifest = open(os.path.join(ROOT, crate, "Cargo.toml"), encoding="utf-8").read()
    normal = manifest.split("[dependencies]", 1)[1].split("\n[", 1)[0]
    for other, package in PACKAGE.items():
        if other != crate and re.search(r"^" + re.escape(package) + r"\s*=", normal, re.M):
            if other not in allowed:
                violations.append(f"crates/{crate}/Cargo.toml: {PACKAGE[crate]} depends on {package}, "
                                  f"which it may not (it may use: {', '.join(sorted(allowed)) or 'nothing'})")
    for extra in ("simulator", "testbed"):
        if re.search(r"^" + extra + r"\b", normal, re.M):
            violations.append(f"crates/{crate}/Cargo.toml: the product depends on the {extra}")

# 2-4. Inside each crate.
for crate, table in MODULES.items():
    src = os.path.join(ROOT, crate, "src")
    graph, folders = {}, {}
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            text = production_text(path)
            crate_rel = os.path.join(crate, "src", rel)
            if crate_rel not in FACADE:
                for number, line in enumerate(text.splitlines(), 1):
                    m = REEXPORT.match(line)
                    if m:
                        violations.append(f"crates/{crate_rel}:{number}: re-exports {m.group(1)}'s item; "
                                          f"the crates above import it from {m.group(1)} itself")
            if rel in ROOTS:
                continue
            module = top_module(rel)
            allowed = table.get(module)
            if allowed is None:
                violations.append(f"crates/{crate_rel}: module {module!r} is not in {crate}'s table")
                continue
            deps = graph.setdefault(module, set())
            for other in names_used(text, rel):
                if other == module or other not in table:
                    continue
                deps.add(other)
                if other not in allowed:
                    violations.append(f"crates/{crate_rel}: {module} -> {other} is not an allowed edge in "
                                      f"{crate} ({module} may import: {', '.join(sorted(allowed)) or 'nothing'})")
            second = second_module(rel)
            if second is not None:
                siblings = folders.setdefault(module, {}).setdefault(second, set())
                if len(rel.split(os.sep)) == 2:
                    for other in SUPER.findall(text):
                        if other != second:
                            siblings.add(other)
                    for group in SUPER_GROUPED.findall(text):
                        siblings.update(h for h in heads(group) if h != second)
                for other in re.findall(r"\bcrate::" + module + r"::([a-z_]+)", text):
                    if other != second:
                        siblings.add(other)
    for module in sorted(graph):
        print(f"{crate:9} {module:13} -> {', '.join(sorted(graph[module])) or '(nothing)'}")
    for module in sorted(folders):
        files = folders[module]
        known = set(files)
        inner = {f: {d for d in deps if d in known} for f, deps in files.items()}
        cycle = find_cycle(inner)
        if cycle:
            violations.append(f"crates/{crate}/src/{module}/: import cycle between its files: " + " -> ".join(cycle))
    cycle = find_cycle(graph)
    if cycle:
        violations.append(f"{crate}: import cycle between top-level modules: " + " -> ".join(cycle))

if violations:
    print("\n".join(violations), file=sys.stderr)
    sys.exit(1)
print("every crate uses only the crates below it; every import inside a crate is an allowed edge; "
      "no re-export hides an edge; no import cycle between the files of a folder")
