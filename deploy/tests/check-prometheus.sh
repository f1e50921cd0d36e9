#!/usr/bin/env bash
# deploy.prometheus: promtool accepts the alert rules, their unit tests pass
# (alerts_test.yaml: each alert fires on the series it is for, and the
# latency alert ignores long-polls), and the scrape config parses.
# Exits 77 where promtool is missing (scripts/deps.sh installs prometheus).
set -u
dir=${1:?deploy/prometheus dir}
command -v promtool >/dev/null || { echo "SKIP: promtool not installed (apt-get install prometheus)"; exit 77; }
cd "$dir" || exit 1
rc=0
promtool check rules alerts.yaml || rc=1
promtool test rules alerts_test.yaml || rc=1
promtool check config --syntax-only scrape.yaml || rc=1
[ "$rc" = 0 ] && echo "ok: promtool check rules, test rules, check config"
exit "$rc"
