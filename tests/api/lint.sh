#!/usr/bin/env bash
# lint.sh YAML LINT_DIR WORK_DIR: lint the OpenAPI document YAML with
# Redocly, 0 errors wanted (warnings are printed, not fatal).
#
# The linter is test-only: LINT_DIR holds its package.json and
# package-lock.json (tests/api/lint); `npm ci` installs exactly that lock
# into WORK_DIR (in the build tree, never the source tree), again only when
# the lock changed.  Exits 77 (skipped) only when the npm registry cannot be
# reached; a missing npm is a failure (scripts/deps.sh --test installs it).
set -euo pipefail
yaml=$1 lint_dir=$2 work=$3

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
        echo "FAIL: node and npm are needed (./scripts/deps.sh --test installs them)" >&2
        exit 1
fi
mkdir -p "$work"
stamp="$work/.lock.sha256"
want=$(sha256sum "$lint_dir/package-lock.json" | cut -d' ' -f1)
if [ ! -x "$work/node_modules/.bin/redocly" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        cp "$lint_dir/package.json" "$lint_dir/package-lock.json" "$work/"
        rm -f "$stamp"
        log="$work/npm-ci.log"
        if ! (cd "$work" && npm ci --ignore-scripts --no-audit --no-fund >"$log" 2>&1); then
                if grep -Eq 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|ENETUNREACH|network' "$log"; then
                        echo "SKIP: the npm registry cannot be reached:" >&2
                        tail -5 "$log" >&2
                        exit 77
                fi
                echo "FAIL: npm ci of the linter failed:" >&2
                tail -20 "$log" >&2
                exit 1
        fi
        echo "$want" >"$stamp"
fi
echo "redocly $("$work/node_modules/.bin/redocly" --version) lint $yaml"
"$work/node_modules/.bin/redocly" lint --format=stylish "$yaml"
