#!/usr/bin/env bash
# client.completion: source client/completion/hpwarm.bash and check a few
# completions, and that each command's option list equals what that
# command's --help documents (so the completion and the CLI cannot drift).
# Usage: test_completion.sh COMPLETION_FILE HPWARM_BINARY
set -u
comp=$1
hpwarm=$2
fails=0

# shellcheck source=/dev/null
source "$comp" || { echo "FAIL: cannot source $comp"; exit 1; }

# complete WORDS...: COMPREPLY for the last word (may be "").
complete_line() {
        COMP_WORDS=(hpwarm "$@")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMPREPLY=()
        _hpwarm
        printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}

expect() {
        local want=$1; shift
        local got
        got=$(complete_line "$@")
        if [ "$got" != "$want" ]; then
                echo "FAIL: hpwarm $* <TAB>: got '$got', want '$want'"
                fails=$((fails + 1))
        fi
}

expect "claim" cl
expect "handoff health help" h
expect "release reserve" re
expect "--reserve" warm vm-1 --res
expect "--ignore-missing" release vm-1 --ig
expect "--pid" claim vm-1 --p
expect "cloud-hypervisor libvirt qemu" handoff vm-1 --vmm ""
expect "--argv" handoff vm-1 vm-2 --ar
expect "nodes place pools" fleet ""
expect "place pools" fleet --hosts f p
expect "--verbose" fleet --hosts f place --size 2M --verb
expect "clear set show" stock ""
expect "sync" placement ""
expect "--compute-node" placement sync --comp
expect "--watch" placement sync --placement http://p:8778 --wa
expect "--to --token-file" publish --to
# The publishers and their options come from the CLI's own help.
PATH="$(dirname "$hpwarm"):$PATH" expect "placement" publish --to ""
PATH="$(dirname "$hpwarm"):$PATH" expect "--compute-node" publish --to placement --comp
expect "set show" stock s
expect "" stock set ""
expect "" stock set 0:2M:4G:2 ""
expect "--json" stock --js
expect "status stock" st
expect "--json" --js
expect "wait warm" --url unix:///x/y.sock wa
expect "1G 2M" warm x --page-size ""
expect "1G 2M" reserve 0 ""
expect "" reserve 0 2M ""
expect "wait warm" help wa
# A command's own options are offered only after it.
expect "" --res

# The lists match what each command's --help documents.
for cmd in health nodes reserve warm status wait pools claim release handoff fleet stock placement publish; do
        want=$("$hpwarm" "$cmd" --help | sed -n '/^Options:/,/^$/p' | grep -o -- '^  --[a-z-]*' |
                sed 's/^ *//' | sort | tr '\n' ' ' | sed 's/ $//')
        got=$(_hpwarm_cmd_opts "$cmd" | tr ' ' '\n' | grep . | sort | tr '\n' ' ' | sed 's/ $//')
        if [ "$got" != "$want" ]; then
                echo "FAIL: $cmd: completion offers '$got', --help documents '$want'"
                fails=$((fails + 1))
        fi
done
want=$("$hpwarm" --help | sed -n '/^Global options/,/^$/p' | grep -o -- '^  \(-h, \)\?--[a-z-]*' |
        sed 's/^.*--/--/' | sort -u | tr '\n' ' ' | sed 's/ $//')
got=$(echo "$_hpwarm_global_opts" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] || { echo "FAIL: global options: completion '$got', --help '$want'"; fails=$((fails + 1)); }

[ $fails -eq 0 ] && echo ok
exit $((fails > 0))
