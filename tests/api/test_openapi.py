#!/usr/bin/env python3
"""api.openapi: api/openapi.yaml is the contract; check it is sound and that it
lists exactly the routes the server answers.

(a) structure: the document parses; it is OpenAPI 3.x; every operation has
    responses (one of them 2xx); every schema property is a schema; every 4xx/5xx response is application/problem+json; every local
    $ref resolves; every {param} in a path template is declared as a path
    parameter and every declared path parameter appears in the template.
(b) routes: the set of (METHOD, template) in the document equals the set in
    the route table of server/src/api/routes.c, both ways.
(c) problems: `components/x-problem-types` lists exactly the rows of the
    error catalog in server/src/base/problem.c (slug, status, title, retryable),
    and every example problem in the document has a slug of the catalog
    with that slug's status and title.
(d) api/problems.json (next to API_YAML), the machine-readable catalog
    installed for clients, is exactly what the catalog generates: an array
    of {slug, status, title, retryable} in enum problem_id order.

Usage: test_openapi.py API_YAML ROUTES_C (problem.c is read from server/src/base,
       beside routes.c's api/)
       test_openapi.py --write-problems API_YAML ROUTES_C   regenerates (d)
Exit 0 on success, 1 on any failure (never 77: a missing routes.c or a
missing YAML module is a failure, not a skip).
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from report import finish  # noqa: E402

HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
ERRORS = []


def fail(msg):
    ERRORS.append(msg)


def load_yaml(path):
    try:
        import yaml
    except ImportError:
        print("FAIL: python3-yaml is not installed (apt-get install -y python3-yaml)")
        sys.exit(1)
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        print(f"FAIL: cannot parse {path}: {e}")
        sys.exit(1)


def resolve(doc, ref):
    """Follow a local JSON pointer ('#/a/b'); None when it does not resolve."""
    if not ref.startswith("#/"):
        return None
    node = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def check_refs(doc, node, where):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and resolve(doc, ref) is None:
            fail(f"{where}: $ref {ref!r} does not resolve")
        for k, v in node.items():
            check_refs(doc, v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            check_refs(doc, v, f"{where}[{i}]")


def check_schemas(node, where):
    """Every entry of a `properties` map is a schema (a mapping), and no key has
    a null value (outside examples).  Catches the YAML slip
    `{type: string, description: a, b}`, which adds a key "b" with no value."""
    if isinstance(node, dict):
        for k, v in node.items():
            if v is None and k not in ("example", "default"):
                fail(f"{where}/{k}: null value (an unquoted comma in a flow mapping?)")
        props = node.get("properties")
        if isinstance(props, dict):
            for name, schema in props.items():
                if not isinstance(schema, dict):
                    fail(f"{where}/properties/{name}: not a schema ({schema!r})")
        for k, v in node.items():
            check_schemas(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            check_schemas(v, f"{where}[{i}]")


def deref(doc, node):
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 16:
        node = resolve(doc, node["$ref"]) or {}
        seen += 1
    return node


def check_structure(doc):
    version = str(doc.get("openapi", ""))
    if not re.match(r"^3\.[01]\.\d+$", version):
        fail(f"openapi: version {version!r} is not 3.0.x or 3.1.x")
    info = doc.get("info") or {}
    if not info.get("title") or not info.get("version"):
        fail("info: title and version are required")
    paths = doc.get("paths")
    if not isinstance(paths, dict) or not paths:
        fail("paths: missing or empty")
        return
    check_refs(doc, doc, "#")
    check_schemas(doc, "#")

    for template, item in paths.items():
        if not isinstance(item, dict):
            fail(f"{template}: path item is not a mapping")
            continue
        placeholders = set(re.findall(r"\{([^}/]+)\}", template))
        common = [deref(doc, p) for p in item.get("parameters", [])]
        ops = [m for m in HTTP_METHODS if m in item]
        if not ops:
            fail(f"{template}: no operations")
        for method in ops:
            op = item[method]
            where = f"{method.upper()} {template}"
            params = common + [deref(doc, p) for p in op.get("parameters", [])]
            declared = {p.get("name") for p in params if p.get("in") == "path"}
            for p in params:
                if p.get("in") == "path" and p.get("required") is not True:
                    fail(f"{where}: path parameter {p.get('name')!r} must be required")
            if declared != placeholders:
                fail(f"{where}: path parameters {sorted(declared)} != template {sorted(placeholders)}")
            responses = op.get("responses")
            if not isinstance(responses, dict) or not responses:
                fail(f"{where}: no responses")
                continue
            if not any(str(c).startswith("2") for c in responses):
                fail(f"{where}: no 2xx response")
            for code, resp in responses.items():
                resp = deref(doc, resp)
                if not isinstance(resp, dict) or "description" not in resp:
                    fail(f"{where} {code}: response without description")
                    continue
                if str(code)[0] in "45":
                    content = resp.get("content") or {}
                    if list(content) != ["application/problem+json"]:
                        fail(f"{where} {code}: error content must be application/problem+json, "
                             f"got {list(content)}")


def doc_routes(doc):
    out = set()
    for template, item in (doc.get("paths") or {}).items():
        if isinstance(item, dict):
            for method in HTTP_METHODS:
                if method in item:
                    out.add((method.upper(), template))
    return out


ROUTE_RE = re.compile(r'\{\s*"([A-Z]+)"\s*,\s*"(/[^"]*)"')


def server_routes(path):
    try:
        with open(path, encoding="utf-8") as f:
            src = f.read()
    except OSError as e:
        print(f"FAIL: cannot read the server's route table {path}: {e}")
        print("      (server/src/api/routes.c must define `static const struct route api_route_rows[] = {...};`)")
        sys.exit(1)
    m = re.search(r"\bconst\s+struct\s+route\s+api_route_rows\s*\[\s*\]\s*=\s*\{(.*?)\n\s*\}\s*;", src, re.S)
    if not m:
        print(f"FAIL: no `static const struct route api_route_rows[] = {{...}};` table in {path}")
        sys.exit(1)
    table = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)   # drop comments
    table = re.sub(r"//[^\n]*", "", table)
    routes = set(ROUTE_RE.findall(table))
    if not routes:
        print(f"FAIL: the route table in {path} has no {{\"METHOD\", \"/pattern\", ...}} entries")
        sys.exit(1)
    return routes


CATALOG_ROW_RE = re.compile(r'\[(PROBLEM_[A-Z0-9_]+)\]\s*=\s*\{\s*"([a-z0-9-]+)"\s*,\s*(\d+)\s*,\s*'
                            r'"((?:[^"\\]|\\.)*)"\s*,\s*(RETRY|FINAL)\s*\}')
ENUM_RE = re.compile(r"\benum\s+problem_id\s*\{(.*?)\}\s*;", re.S)
PROBLEM_URN = "urn:hpwarm:problem:"


def catalog(problem_c):
    """The error catalog: {slug: (status, title, retryable)} from the table
    `static const struct problem_type catalog[...] = {...};` in problem.c,
    in the order of enum problem_id (problem.h, next to it)."""
    try:
        with open(problem_c, encoding="utf-8") as f:
            src = f.read()
    except OSError as e:
        print(f"FAIL: cannot read the error catalog {problem_c}: {e}")
        sys.exit(1)
    m = re.search(r"\bstruct\s+problem_type\s+catalog\s*\[[^]]*\]\s*=\s*\{(.*?)\n\s*\}\s*;", src, re.S)
    if not m:
        print(f"FAIL: no `struct problem_type catalog[] = {{...}};` table in {problem_c}")
        sys.exit(1)
    table = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    rows = {}
    by_enum = {}
    for enum, slug, status, title, retry in CATALOG_ROW_RE.findall(table):
        if enum != "PROBLEM_" + slug.upper().replace("-", "_"):
            fail(f"{problem_c}: row {enum} has slug {slug!r}; the id is PROBLEM_ + the slug in upper case")
        if slug in rows:
            fail(f"{problem_c}: slug {slug!r} has two rows")
        rows[slug] = (int(status), title, retry == "RETRY")
        by_enum[enum] = slug
    # Every row of the table must have parsed: count the designated rows.
    if len(rows) != len(re.findall(r"\[PROBLEM_", table)) or len(rows) < 10:
        print(f"FAIL: parsed {len(rows)} rows of the catalog in {problem_c}; "
              "every row must read [PROBLEM_X] = { \"slug\", STATUS, \"Title\", RETRY|FINAL },")
        sys.exit(1)
    problem_h = os.path.join(os.path.dirname(problem_c), "problem.h")
    try:
        with open(problem_h, encoding="utf-8") as f:
            m = ENUM_RE.search(f.read())
    except OSError as e:
        print(f"FAIL: cannot read {problem_h}: {e}")
        sys.exit(1)
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S) if m else ""
    names = [n.split("=")[0].strip() for n in body.split(",") if n.strip()]
    order = [n for n in names if n not in ("PROBLEM_NONE", "PROBLEM__COUNT")]
    if sorted(order) != sorted(by_enum):
        print(f"FAIL: enum problem_id in {problem_h} and the rows of {problem_c} name different ids")
        sys.exit(1)
    return {by_enum[n]: rows[by_enum[n]] for n in order}


def problems_json(rows):
    """api/problems.json as the catalog generates it: a JSON array, one
    problem per line in enum problem_id order (a slug's position, from 1,
    is its value in the client's enum hpw_slug, so the array only grows at
    its end)."""
    import json
    lines = [json.dumps({"slug": slug, "status": st, "title": title, "retryable": retry})
             for slug, (st, title, retry) in rows.items()]
    return "[\n  " + ",\n  ".join(lines) + "\n]\n"


def check_problems_json(path, rows):
    want = problems_json(rows)
    try:
        with open(path, encoding="utf-8") as f:
            have = f.read()
    except OSError as e:
        fail(f"{path}: {e} (regenerate: test_openapi.py --write-problems ...)")
        return
    if have != want:
        fail(f"{path} differs from the catalog in server/src/base/problem.c; regenerate it with "
             "tests/api/test_openapi.py --write-problems api/openapi.yaml server/src/api/routes.c")


def example_problems(node, where):
    """Every mapping in the document whose `type` is a problem URN."""
    if isinstance(node, dict):
        t = node.get("type")
        if isinstance(t, str) and t.startswith(PROBLEM_URN):
            yield where, node
        for k, v in node.items():
            yield from example_problems(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from example_problems(v, f"{where}[{i}]")


def check_problems(doc, rows, yaml_path):
    listed = (doc.get("components") or {}).get("x-problem-types")
    if not isinstance(listed, dict):
        fail(f"{yaml_path}: components/x-problem-types (slug: {{status, title}}) is missing")
        listed = {}
    for slug, (status, title, retry) in sorted(rows.items()):
        entry = listed.get(slug)
        if not isinstance(entry, dict):
            fail(f"problem type {slug!r} is in the catalog but not in components/x-problem-types")
            continue
        if entry.get("status") != status:
            fail(f"problem type {slug!r}: status {entry.get('status')!r} in {yaml_path}, {status} in the catalog")
        if entry.get("title") != title:
            fail(f"problem type {slug!r}: title {entry.get('title')!r} in {yaml_path}, {title!r} in the catalog")
        if entry.get("retryable") is not retry:
            fail(f"problem type {slug!r}: retryable {entry.get('retryable')!r} in {yaml_path}, "
                 f"{retry} in the catalog")
    for slug in sorted(set(listed) - set(rows)):
        fail(f"problem type {slug!r} is in components/x-problem-types but not in the catalog")

    n = 0
    for where, ex in example_problems(doc, "#"):
        n += 1
        slug = ex["type"][len(PROBLEM_URN):]
        if slug not in rows:
            fail(f"{where}: example problem type {slug!r} is not in the catalog")
            continue
        status, title, _ = rows[slug]
        if ex.get("title") != title:
            fail(f"{where}: example {slug!r} has title {ex.get('title')!r}, the catalog says {title!r}")
        if ex.get("status") != status:
            fail(f"{where}: example {slug!r} has status {ex.get('status')!r}, the catalog says {status}")
    if n == 0:
        fail(f"{yaml_path}: no example problems found; the scan is broken")


def main(argv):
    write = len(argv) == 4 and argv[1] == "--write-problems"
    if write:
        argv = argv[:1] + argv[2:]
    if len(argv) != 3:
        print(__doc__)
        return 2
    problems_path = os.path.join(os.path.dirname(os.path.abspath(argv[1])), "problems.json")
    if write:
        rows = catalog(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(argv[2]))), "base", "problem.c"))
        with open(problems_path, "w", encoding="utf-8") as f:
            f.write(problems_json(rows))
        print(f"wrote {problems_path}: {len(rows)} problem types")
        return 0
    doc = load_yaml(argv[1])
    if not isinstance(doc, dict):
        print(f"FAIL: {argv[1]} is not a mapping")
        return 1
    check_structure(doc)

    documented = doc_routes(doc)
    served = server_routes(argv[2])
    for method, template in sorted(served - documented):
        fail(f"served but not in {argv[1]}: {method} {template}")
    for method, template in sorted(documented - served):
        fail(f"in {argv[1]} but not served: {method} {template}")

    # Every problem type the server can send is documented, with its one
    # status and title (scripts match slugs, people read titles).
    problem_c = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(argv[2]))), "base", "problem.c")
    rows = catalog(problem_c)
    check_problems(doc, rows, argv[1])
    check_problems_json(problems_path, rows)

    return finish(ERRORS, f"{len(documented)} operations documented and served; the problem types match the catalog")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
