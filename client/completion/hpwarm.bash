# bash completion for hpwarm(1).
#
# Self-contained (no bash-completion helpers needed, though it is installed
# where that package looks).  The option lists mirror the CLI's option table
# (client/src/cli/cli_parse.c); tests/client/test_completion.sh checks them
# against each command's --help, so they cannot drift apart silently.
# Pool names are asked of the daemon (hpwarm pools, bounded to 1 s).

_hpwarm_global_opts="--url --token-file --cacert --cert --key --timeout --connect-timeout --json --help --version"

_hpwarm_cmd_opts() {
        case $1 in
        reserve) echo "--allow-partial --elastic --min --max --headroom --idle --allow-best-effort" ;;
        warm) echo "--node --size --page-size --threads --ttl --reserve --label --file-owner --wait" ;;
        claim) echo "--pid" ;;
        release) echo "--ignore-missing" ;;
        handoff) echo "--vmm --argv --as --source-url" ;;
        fleet) echo "--hosts --prometheus --host-label --url-template --max-age --size --page-size --warm --wait --verbose" ;;
        # Its own options (cli_placement.c): --token-file and --url are Placement's and hpwarmd's.
        placement) echo "--placement --compute-node --token-file --watch --url --timeout --help" ;;
        # The runner's options (cli_publish.c); a publisher's own are asked of
        # the CLI once --to names it (_hpwarm_publisher_opts).
        publish) echo "--to --watch --url --timeout --help" ;;
        esac
}

# The publishers and a publisher's options, as hpwarm publish's help lists them.
_hpwarm_publishers() {
        hpwarm publish --help 2>/dev/null | sed -n '/^Publishers/,/^$/p' | awk 'NR > 1 && NF { print $1 }'
}
_hpwarm_publisher_opts() {
        hpwarm publish --to "$1" --help 2>/dev/null | sed -n '/^Options:/,/^$/p' | grep -o -- '^  --[a-z-]*'
}

_hpwarm() {
        local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
        local commands="health nodes reserve warm status wait pools claim release handoff fleet stock placement publish libvirt-hook help"
        local cmd="" i w
        local -a globals_url=()

        COMPREPLY=()
        # The command is the first word that is neither an option nor the
        # value of a global option that takes one.
        for ((i = 1; i < COMP_CWORD; i++)); do
                w=${COMP_WORDS[i]}
                case $w in
                --url|--token-file|--cacert|--cert|--key|--timeout|--connect-timeout) ((i++)) ;;
                --url=*) ;;
                -*) ;;
                *) cmd=$w; break ;;
                esac
        done
        for ((i = 1; i < COMP_CWORD; i++)); do
                case ${COMP_WORDS[i]} in
                --url) globals_url=(--url "${COMP_WORDS[i+1]}") ;;
                --url=*) globals_url=("${COMP_WORDS[i]}") ;;
                esac
        done

        # Values of options.
        case $prev in
        --token-file|--cacert|--cert|--key|--hosts)
                COMPREPLY=($(compgen -f -- "$cur"))
                return ;;
        --vmm)
                COMPREPLY=($(compgen -W "qemu cloud-hypervisor libvirt" -- "$cur"))
                return ;;
        --page-size)
                COMPREPLY=($(compgen -W "2M 1G" -- "$cur"))
                return ;;
        --url)
                COMPREPLY=($(compgen -W "unix:///run/hpwarmd/api.sock http://127.0.0.1:7411" -- "$cur"))
                return ;;
        --source-url)
                COMPREPLY=($(compgen -W "http:// https://" -- "$cur"))
                return ;;
        --as)
                # Source pools: those of --source-url's daemon when given, else this one's.
                local src=("${globals_url[@]}") j names
                for ((j = 1; j < COMP_CWORD; j++)); do
                        [[ ${COMP_WORDS[j]} == --source-url ]] && src=(--url "${COMP_WORDS[j+1]}")
                done
                names=$(hpwarm "${src[@]}" --timeout 1 pools 2>/dev/null | awk 'NR > 1 { print $1 }')
                COMPREPLY=($(compgen -W "$names" -- "$cur"))
                return ;;
        --prometheus)
                COMPREPLY=($(compgen -W "http://127.0.0.1:9090" -- "$cur"))
                return ;;
        --placement)
                COMPREPLY=($(compgen -W "http://127.0.0.1:8778" -- "$cur"))
                return ;;
        --to)
                COMPREPLY=($(compgen -W "$(_hpwarm_publishers)" -- "$cur"))
                return ;;
        --url-template)
                COMPREPLY=($(compgen -W "http://{instance} https://{instance}" -- "$cur"))
                return ;;
        --timeout|--connect-timeout|--node|--size|--threads|--ttl|--label|--file-owner|--pid|--warm|--host-label|--max-age|\
        --compute-node)
                return ;;
        esac

        if [[ -z $cmd ]]; then
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "$_hpwarm_global_opts" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
                fi
                return
        fi
        if [[ $cur == -* ]]; then
                local extra=""
                if [[ $cmd == publish ]]; then
                        for ((i = 1; i < COMP_CWORD; i++)); do
                                [[ ${COMP_WORDS[i]} == --to ]] && extra=$(_hpwarm_publisher_opts "${COMP_WORDS[i+1]}")
                        done
                fi
                COMPREPLY=($(compgen -W "$(_hpwarm_cmd_opts "$cmd") $extra $_hpwarm_global_opts" -- "$cur"))
                return
        fi
        # Positional arguments.
        local npos=0 seen=0
        for ((i = 1; i < COMP_CWORD; i++)); do
                w=${COMP_WORDS[i]}
                if ((seen)); then
                        case $w in
                        --url|--token-file|--cacert|--cert|--key|--timeout|--connect-timeout|--node|--size|\
                        --page-size|--threads|--ttl|--label|--file-owner|--pid|--vmm|--hosts|--warm|--prometheus|--host-label|\
                        --url-template|--max-age|--as|--source-url|--placement|--compute-node|--to) ((i++)) ;;
                        -*) ;;
                        *) ((npos++)) ;;
                        esac
                elif [[ $w == "$cmd" ]]; then
                        seen=1
                fi
        done
        case $cmd in
        help)
                ((npos == 0)) && COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
        fleet)
                ((npos == 0)) && COMPREPLY=($(compgen -W "nodes pools place" -- "$cur")) ;;
        placement)
                ((npos == 0)) && COMPREPLY=($(compgen -W "sync" -- "$cur")) ;;
        stock)
                # stock set takes NODE:PAGESIZE:SIZE:COUNT words: nothing to offer.
                ((npos == 0)) && COMPREPLY=($(compgen -W "show set clear" -- "$cur")) ;;
        status|wait|claim|release|handoff)
                # One pool, or for handoff one per guest node.
                if ((npos == 0)) || [[ $cmd == handoff ]]; then
                        local names
                        names=$(hpwarm "${globals_url[@]}" --timeout 1 pools 2>/dev/null | awk 'NR > 1 { print $1 }')
                        COMPREPLY=($(compgen -W "$names" -- "$cur"))
                fi ;;
        reserve)
                ((npos == 1)) && COMPREPLY=($(compgen -W "2M 1G" -- "$cur")) ;;
        esac
}
complete -F _hpwarm hpwarm
