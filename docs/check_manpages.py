#!/usr/bin/env python3
"""docs.manpages: the man pages render without warnings and document every
long option the programs accept.

Usage: check_manpages.py DOCS_DIR SOURCE_DIR
Options are read from hpwarmd's getopt table (server/src/options.c: {"name", ...})
and from every "--name" the client's parser and messages mention
(client/cli_options.json, the option table; client/src/cli/cli_options.c,
client/src/cli/cli_parse.c, client/src/cli/cli_core.c, client/src/publish/cli_placement.c,
client/src/publish/cli_publish.c).  A page
may document more (options not yet in the code); it may not document fewer.
docs/OPERATING.md's hpwarmd synopsis must list every hpwarmd option as well.
Rendering uses man(1) when installed; otherwise that part is reported
skipped.
"""
import os
import re
import shutil
import subprocess
import sys


def options_in_page(path):
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\-", "-")
    return set(re.findall(r"--([a-z][a-z0-9-]+)", text))


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    docs, src = argv[1], argv[2]
    errors = []
    pairs = [
        ("hpwarmd.8", os.path.join(src, "server/src/options.c"), r'\{"([a-z][a-z0-9-]+)",\s*(?:no|required|optional)_argument'),
        ("hpwarm.1", [os.path.join(src, "client/cli_options.json"), os.path.join(src, "client/src/cli/cli_options.c"), os.path.join(src, "client/src/cli/cli_parse.c"), os.path.join(src, "client/src/cli/cli_core.c"),
                      os.path.join(src, "client/src/publish/cli_placement.c"), os.path.join(src, "client/src/publish/cli_publish.c")],
         r'--([a-z][a-z0-9-]+)'),
    ]
    for page, source, pattern in pairs:
        path = os.path.join(docs, page)
        if not os.path.exists(path):
            errors.append(f"{page}: missing")
            continue
        documented = options_in_page(path)
        sources = source if isinstance(source, list) else [source]
        accepted = set()
        try:
            for one in sources:
                with open(one, encoding="utf-8") as f:
                    accepted |= set(re.findall(pattern, f.read()))
        except OSError as e:
            errors.append(f"{page}: cannot read {e.filename}: {e}")
            continue
        if not accepted:
            errors.append(f"{page}: found no options in {source}")
        for opt in sorted(accepted - documented):
            errors.append(f"{page}: --{opt} is accepted by the program but not documented")
        print(f"ok: {page}: {len(accepted & documented)} options documented")

        if shutil.which("man"):
            env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
            r = subprocess.run(["man", "--warnings", "-l", path], capture_output=True, text=True, env=env)
            if r.returncode != 0 or r.stderr.strip():
                errors.append(f"{page}: man reports:\n{r.stderr}")
        else:
            print(f"skipped: man not installed, {page} not rendered")
    # OPERATING.md's "Running hpwarmd" synopsis lists every daemon option too.
    try:
        with open(os.path.join(src, "server/src/options.c"), encoding="utf-8") as f:
            accepted = set(re.findall(pairs[0][2], f.read()))
        with open(os.path.join(src, "docs/OPERATING.md"), encoding="utf-8") as f:
            m = re.search(r"```\nhpwarmd (.*?)```", f.read(), re.S)
        listed = set(re.findall(r"--([a-z][a-z0-9-]+)", m.group(1))) if m else set()
        if not m:
            errors.append("docs/OPERATING.md: no hpwarmd synopsis block found")
        for opt in sorted(accepted - listed - {"help", "version"}):
            errors.append(f"docs/OPERATING.md: --{opt} is accepted by hpwarmd but not in its synopsis")
        print(f"ok: docs/OPERATING.md synopsis: {len(accepted & listed)} options listed")
    except OSError as e:
        errors.append(f"docs/OPERATING.md: {e}")
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
