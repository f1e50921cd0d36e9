#!/usr/bin/env python3
"""docs.architecture: docs/ARCHITECTURE.md still describes the code.

Usage: check_architecture.py SOURCE_DIR

Rules, each reported by name:
  threads-named      every file under server/src that calls pthread_create
                     names at least as many threads (pthread_setname_np), so
                     no thread passes for the main thread;
  threads-documented every thread name the daemon sets is in ARCHITECTURE.md.
                     A name is resolved from pthread_setname_np's argument: a
                     string literal, a #define'd literal, a field assigned
                     literals (l->thread_name = tcp ? "a" : "b"), or a buffer
                     filled by snprintf with a format; a "%s" in the format is
                     the first literal argument of each call of the function
                     that formats it (workq_start(..., "http-blk", ...)).
                     Numbers in a format ("hpw-n%d-w%u") may be written as
                     <placeholder>, N, i or digits ("hpw-n<node>-w<i>");
  files-mentioned    every .c under server/src and client/src (their folders
                     included) is named in ARCHITECTURE.md;
  files-exist        every file.c ARCHITECTURE.md names exists (server/src,
                     client/src and their folders, common);
  deps-owned         each row of the outside-dependency table names exactly
                     the files that include that dependency's headers;
  layers-down        the folders of server/src and of client/src each stack
                     as ARCHITECTURE.md's line "The folders of server/src
                     stack: main -> api -> ... -> base" (and "... of
                     client/src stack: main -> ... -> lib") says (the tree
                     itself is "main"; names split by "/" share a level):
                     a file includes project headers only from its own
                     folder and from folders on a lower level, and every
                     folder is on the line;
  files-short        no .c or .h under server/src, client/src (folders
                     included) or common has more than 800 lines;
  parts-documented   every part of struct pools (a `struct pools_X name;`
                     member in server/src/pools/pools_internal.h) is named in
                     ARCHITECTURE.md's table of parts as `struct pools_X name`;
  locks-one-style    the pool core (server/src/pools/*.c) takes a lock it
                     holds to the end of a function or block with
                     POOLS_LOCKED; every pools_lock() by hand has a
                     "By hand:" comment, on one of the three lines above it,
                     saying why the lock is dropped before the end.
Exit 0 when all hold, 1 otherwise.
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from report import finish  # noqa: E402

LITERAL = r'"((?:[^"\\]|\\.)*)"'
NUM_CONV = re.compile(r"%[-+ #0]*\d*(?:hh|h|ll|l|z|j|t)?[diuxX]")


def server_sources(src_dir):
    """Every .c under server/src, its folders (pools/, engine/, http/) included."""
    return sorted(glob.glob(os.path.join(src_dir, "server/src/**/*.c"), recursive=True))


def client_sources(src_dir):
    """Every .c under client/src, its folders (lib/, fleet/, cli/ ...) included."""
    return sorted(glob.glob(os.path.join(src_dir, "client/src/**/*.c"), recursive=True))


def layers(src, tree, arch, errors):
    """layers-down for TREE ("server/src" or "client/src"): the chain after
    "The folders of TREE stack:" in ARCHITECTURE.md; returns it or None."""
    chain = None
    m = re.search(r"[Tt]he folders of " + re.escape(tree) + r" stack:\s+(main(?:\s+->\s+[a-z]+(?:\s+/\s+[a-z]+)*)+)",
                  arch)
    if m:
        chain = " ".join(m.group(1).split())
    if not chain:
        errors.append(f"layers-down: ARCHITECTURE.md has no line 'The folders of {tree} stack: main -> ...'")
        return None
    level = {}
    for i, names in enumerate(chain.split(" -> ")):
        for n in names.split(" / "):
            level[n] = i
    root = os.path.join(src, tree)
    paths = glob.glob(os.path.join(root, "**/*.[ch]"), recursive=True)
    headers = {}
    for path in paths:
        folder = os.path.dirname(os.path.relpath(path, root)) or "main"
        headers[os.path.basename(path)] = folder
        if folder not in level:
            errors.append(f"layers-down: folder {folder} of {os.path.relpath(path, src)} is not in '{chain}'")
    for path in paths:
        folder = os.path.dirname(os.path.relpath(path, root)) or "main"
        for inc in re.findall(r'^\s*#\s*include\s*"([^"]+)"', read(path), re.M):
            to = headers.get(os.path.basename(inc))
            if to is None or to == folder or folder not in level or to not in level:
                continue
            if level[to] <= level[folder]:
                errors.append(f"layers-down: {os.path.relpath(path, src)} ({folder}) includes {inc} "
                              f"({to}), which is not below it in '{chain}'")
    return chain


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def enclosing_function(text, pos):
    """Name of the function whose body holds POS: the last definition line
    (at column 0, ending in an opening parenthesis list) before it."""
    name = None
    for m in re.finditer(r"^[A-Za-z_][\w \*]*?\b(\w+)\([^;{]*\)\s*\{", text, re.M | re.S):
        if m.start() > pos:
            break
        name = m.group(1)
    return name


def name_specs(src_dir):
    """Yield (file, spec or None, what) for every pthread_setname_np call."""
    sources = {os.path.basename(p): read(p) for p in server_sources(src_dir)}
    for fname, text in sources.items():
        for m in re.finditer(r"pthread_setname_np\s*\(([^;]*)\)\s*;", text):
            arg = m.group(1).split(",", 1)[1].strip()
            lit = re.fullmatch(LITERAL, arg)
            if lit:
                yield fname, [lit.group(1)], arg
                continue
            d = re.search(r"^#define\s+" + re.escape(arg) + r"\s+" + LITERAL, text, re.M)
            if d:
                yield fname, [d.group(1)], arg
                continue
            field = re.fullmatch(r"\w+(?:->|\.)(\w+)", arg)
            if field:
                lits = []
                for a in re.finditer(r"(?:->|\.)" + re.escape(field.group(1)) + r"\s*=\s*([^;]*);", text):
                    lits += re.findall(LITERAL, a.group(1))
                yield fname, lits or None, arg
                continue
            fmt = None
            for s in re.finditer(r"snprintf\s*\(\s*" + re.escape(arg) + r"\s*,[^,]*,\s*" + LITERAL, text):
                if s.start() < m.start():
                    fmt = s
            if not fmt:
                yield fname, None, arg
                continue
            if "%s" not in fmt.group(1):
                yield fname, [fmt.group(1)], arg
                continue
            func = enclosing_function(text, fmt.start())
            names = []
            for other in sources.values():
                for c in re.finditer(r"\b" + re.escape(func or "?") + r"\s*\(([^;]*)\)\s*;", other):
                    first = re.search(LITERAL, c.group(1))
                    if first:
                        names.append(fmt.group(1).replace("%s", first.group(1), 1))
            yield fname, names or None, arg


def spec_regex(spec):
    out, pos = "", 0
    for m in NUM_CONV.finditer(spec):
        out += re.escape(spec[pos:m.start()]) + r"(?:<[^<>\s]+>|N|i|\d+)"
        pos = m.end()
    out += re.escape(spec[pos:])
    return re.compile(r"(?<![\w-])" + out + r"(?![\w-])")


def includes(path):
    return re.findall(r'^\s*#\s*include\s*<([^>]+)>', read(path), re.M)


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    src = argv[1]
    arch_path = os.path.join(src, "docs/ARCHITECTURE.md")
    arch = read(arch_path)
    errors = []
    server_c = server_sources(src)
    server_rel = {os.path.basename(p): os.path.relpath(p, src) for p in server_c}

    # threads-named
    for path in server_c:
        text = read(path)
        created = len(re.findall(r"\bpthread_create\s*\(", text))
        named = len(re.findall(r"\bpthread_setname_np\s*\(", text))
        if named < created:
            errors.append(f"threads-named: {os.path.basename(path)} creates {created} thread(s) "
                          f"but names {named}")

    # threads-documented
    n_names = 0
    for fname, specs, arg in name_specs(src):
        if not specs:
            errors.append(f"threads-documented: cannot tell the name {fname} sets with "
                          f"pthread_setname_np(..., {arg}); use a literal or a #define")
            continue
        for spec in specs:
            n_names += 1
            if not spec_regex(spec).search(arch):
                errors.append(f"threads-documented: thread \"{spec}\" ({fname}) is not in ARCHITECTURE.md")
    if n_names < 5:
        errors.append(f"threads-documented: found only {n_names} thread names; the scan is broken")

    # files-mentioned
    client_c = client_sources(src)
    client_rel = {os.path.basename(p): os.path.relpath(p, src) for p in client_c}
    for tree, rel in (("server/src", server_rel), ("client/src", client_rel)):
        for base, path in rel.items():
            folder = os.path.dirname(os.path.relpath(path, tree))
            top = r"(?:" + re.escape(tree) + "/)?"
            prefix = top + r"(?:" + re.escape(folder) + "/)?" if folder else top
            word = re.compile(r"(?<![\w/])" + prefix + re.escape(base) + r"\b")
            if not word.search(arch):
                errors.append(f"files-mentioned: {path} is not named in ARCHITECTURE.md")

    # files-exist
    named = r"(?<![\w/.-])((?:client/src/(?:[a-z]+/)?|common/)?[a-z][a-z0-9_]*\.c)\b"
    for name in sorted(set(re.findall(named, arch))):
        base = os.path.basename(name)
        if name.startswith("client/src/"):
            ok = os.path.exists(os.path.join(src, name)) or \
                (name.count("/") == 2 and base in client_rel)
        elif "/" in name:
            ok = os.path.exists(os.path.join(src, name))
        else:
            ok = base in server_rel or base in client_rel or os.path.exists(os.path.join(src, "common", name))
        if not ok:
            errors.append(f"files-exist: ARCHITECTURE.md names {name}, which does not exist")

    # deps-owned
    all_c = server_c + client_c + sorted(glob.glob(os.path.join(src, "common/*.c")))
    rows = 0
    for line in arch.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not line.startswith("|"):
            continue
        headers = [h for h in re.findall(r"`([^`]+)`", cells[1]) if h.endswith(".h")]
        if not headers:
            continue
        rows += 1
        listed = set(re.findall(r"`((?:client/src/[a-z]+/|common/)?[a-z][a-z0-9_]*\.c)`", cells[2]))
        listed = {n if "/" in n else server_rel.get(n, "server/src/" + n) for n in listed}

        def matches(inc):
            for h in headers:
                if h.endswith("/*.h") and inc.startswith(h[:-3]):
                    return True
                if inc == h:
                    return True
            return False

        actual = {os.path.relpath(p, src) for p in all_c if any(matches(i) for i in includes(p))}
        for f in sorted(actual - listed):
            errors.append(f"deps-owned: {f} includes {cells[0]} ({', '.join(headers)}) but the table does not list it")
        for f in sorted(listed - actual):
            errors.append(f"deps-owned: the table lists {f} for {cells[0]}, but it includes none of {', '.join(headers)}")
    if rows < 5:
        errors.append(f"deps-owned: found only {rows} dependency rows in ARCHITECTURE.md")

    # layers-down
    chain = layers(src, "server/src", arch, errors)
    client_chain = layers(src, "client/src", arch, errors)

    # files-short
    for path in sorted(glob.glob(os.path.join(src, "server/src/**/*.[ch]"), recursive=True) +
                       glob.glob(os.path.join(src, "client/src/**/*.[ch]"), recursive=True) + glob.glob(os.path.join(src, "common/*.[ch]"))):
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > 800:
            errors.append(f"files-short: {os.path.relpath(path, src)} has {n} lines (at most 800)")

    # parts-documented
    internal = os.path.join(src, "server/src/pools/pools_internal.h")
    m = re.search(r"^struct pools \{\n(.*?)^\};", read(internal), re.M | re.S)
    parts = re.findall(r"^\s+struct (pools_\w+) (\w+);", m.group(1), re.M) if m else []
    if len(parts) < 5:
        errors.append(f"parts-documented: found only {len(parts)} parts of struct pools in pools_internal.h")
    for typ, name in parts:
        if f"`struct {typ} {name}`" not in arch:
            errors.append(f"parts-documented: struct pools' part `struct {typ} {name}` is not in ARCHITECTURE.md")

    # locks-one-style
    by_hand = guarded = 0
    for path in sorted(glob.glob(os.path.join(src, "server/src/pools/*.c"))):
        lines = read(path).split("\n")
        for i, line in enumerate(lines):
            if re.search(r"\bPOOLS_LOCKED\(", line):
                guarded += 1
            if not re.search(r"\bpools_lock\(", line):
                continue
            by_hand += 1
            if not any("By hand:" in above for above in lines[max(0, i - 3):i]):
                errors.append(f"locks-one-style: {os.path.relpath(path, src)}:{i + 1} takes a lock by hand "
                              "with no \"By hand:\" comment saying why it is dropped before the end "
                              "(POOLS_LOCKED if it is not)")
    if guarded < 10:
        errors.append(f"locks-one-style: found only {guarded} POOLS_LOCKED guards in server/src/pools; "
                      "the scan is broken")

    return finish(errors, f"{n_names} thread names, {len(server_c)} server files, {rows} dependencies, "
                          f"{len(parts)} parts of struct pools described; server folders stack as {chain}, "
                          f"client folders as {client_chain}; "
                          f"pool locks: {guarded} guards, {by_hand} by hand")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
