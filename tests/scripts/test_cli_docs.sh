#!/bin/bash
# The `tether` CLI's --help against docs/cli.md, so that neither drifts from the other:
#   1. the commands are those `tether --help` lists;
#   2. each command's options, as its --help lists them (outside `...` spans, which quote other
#      commands), are exactly the options docs/cli.md's table "Options of each command" gives
#      for that command, both ways;
#   3. every option a `tether CMD ...` code span of docs/cli.md uses is one CMD's --help lists;
#   4. every option a --help lists is taken by the command (none answers "unknown option");
#   5. a bad device URL's message names every URL scheme of docs/cli.md's device table.
# Nothing here contacts a device: $TETHER_DEVICE points at a closed port of 127.0.0.1, and
# every probe runs in a temporary directory that is removed at the end.
# usage: test_cli_docs.sh SOURCE_DIR TETHER
set -u
root=$1
tether=$2
doc=$root/docs/cli.md
model=$root/examples/kws/kws.json
fail=0
passed=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

work=$(mktemp -d "${TMPDIR:-/tmp}/tether-cli-docs-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export TETHER_DEVICE=tcp://127.0.0.1:1 # refused at once: no probe reaches a device
unset TETHER_TOKEN_FILE TETHER_FIRMWARE

# The options of a text: --long and -o, outside `...` spans, one per line, sorted.
options_of() {
    awk 'BEGIN { RS = "\001" } {
        n = split($0, part, "`")
        for (k = 1; k <= n; k += 2) {            # the pieces outside backquotes
            s = part[k]
            while (match(s, /(^|[^A-Za-z0-9_-])(--[a-z0-9][a-z0-9-]*|-o)([^A-Za-z0-9_-]|$)/)) {
                o = substr(s, RSTART, RLENGTH)
                sub(/^[^-]*/, "", o); sub(/[^a-z0-9-]$/, "", o); sub(/[^a-z0-9]$/, "", o)
                if (o != "--help" && o != "-h") print o
                s = substr(s, RSTART + RLENGTH - 1)
            }
        }
    }' | sort -u
}

# 1. the commands
commands=$("$tether" --help | awk '/^  [a-z][a-z-]+  / { print $1 }')
[ -n "$commands" ] || { echo "FAIL: tether --help lists no commands"; exit 1; }

# The table of docs/cli.md: "| `cmd` | `--a`, `--b` ... |" rows under "## Options of each command"
table=$(awk '/^## Options of each command/ { on = 1; next } /^## / { on = 0 } on && /^\| `/' "$doc")
[ -n "$table" ] || bad "docs/cli.md has no table under '## Options of each command'"

for cmd in $commands; do
    help=$("$tether" "$cmd" --help 2>&1) || { bad "tether $cmd --help exited non-zero"; continue; }
    printf '%s\n' "$help" | options_of >"help.$cmd"
    row=$(printf '%s\n' "$table" | grep -F "| \`$cmd\` |" | head -1)
    if [ -z "$row" ]; then
        bad "docs/cli.md's option table has no row for '$cmd'"
        continue
    fi
    # the row lists options as `--a`, `--b N`, `--c[=FILE]`: each such span's option
    printf '%s\n' "${row#*\` |}" | tr '`' '\n' |
        awk 'NR % 2 == 0 && /^-/ { o = $1; sub(/[[=].*/, "", o); print o }' | sort -u >"doc.$cmd"
    # 2. both ways
    only_help=$(comm -23 "help.$cmd" "doc.$cmd" | tr '\n' ' ')
    only_doc=$(comm -13 "help.$cmd" "doc.$cmd" | tr '\n' ' ')
    [ -z "$only_help" ] || bad "tether $cmd --help lists $only_help but docs/cli.md's table does not"
    [ -z "$only_doc" ] || bad "docs/cli.md's table gives $cmd ${only_doc}which tether $cmd --help does not list"
    [ -z "$only_help$only_doc" ] && passed=$((passed + 1))
done

# 3. `tether CMD ...` spans of docs/cli.md (a span may run over lines)
tr '\n' ' ' <"$doc" | awk -v cmds=" $(echo $commands) " 'BEGIN { RS = "\001" } {
    n = split($0, part, "`")
    for (k = 2; k <= n; k += 2) {
        s = part[k]
        gsub(/  +/, " ", s)
        if (s !~ /^tether [a-z|\/-]+( |$)/) continue
        split(s, w, " ")
        m = split(w[2], names, /[|\/]/)
        for (i = 1; i <= m; i++)
            if (index(cmds, " " names[i] " ")) print names[i] "\t" s
    }
}' >spans
while IFS=$'\t' read -r cmd span; do
    for o in $(printf '%s\n' "$span" | options_of); do
        grep -qx -- "$o" "help.$cmd" 2>/dev/null ||
            bad "docs/cli.md: \`$span\`: $o is not an option of tether $cmd (its --help)"
    done
done <spans
passed=$((passed + 1))

# 4. every listed option is taken: `tether CMD OPT x` never says the option is unknown. A
#    command that checks its arguments only after its model is probed with one (plan).
for cmd in $commands; do
    [ -f "help.$cmd" ] || continue
    head=("$cmd")
    case $cmd in pool) head=(pool add) ;; esac
    probe=$("$tether" "${head[@]}" --no-such-option x 2>&1)
    if ! printf '%s\n' "$probe" | grep -q "unknown.*'--no-such-option'"; then
        head=("$cmd" "$model")
        probe=$("$tether" "${head[@]}" --no-such-option x 2>&1)
        printf '%s\n' "$probe" | grep -q "unknown.*'--no-such-option'" ||
            { bad "tether $cmd does not say that --no-such-option is unknown: $probe"; continue; }
    fi
    while read -r o; do
        out=$("$tether" "${head[@]}" "$o" x 2>&1 </dev/null)
        if [ "$cmd" = pool ] && printf '%s\n' "$out" | grep -q "unknown.*'$o'"; then
            out=$("$tether" pool status "$o" x 2>&1 </dev/null)
        fi
        if printf '%s\n' "$out" | grep -q "unknown.*'$o'"; then
            bad "tether $cmd --help lists $o, which tether $cmd refuses: $out"
        else
            passed=$((passed + 1))
        fi
    done <"help.$cmd"
done

# 5. the URL schemes of docs/cli.md's device table in the messages of a bad and an empty URL
schemes=$(awk '/^\| URL \| meaning/ { on = 1; next } on && !/^\|/ { on = 0 } on' "$doc" |
    grep -o '`[a-z-]*:' | tr -d '`' | sort -u)
[ -n "$schemes" ] || bad "docs/cli.md has no device URL table"
for url in bogus://x ""; do
    out=$("$tether" info --device "$url" 2>&1)
    for s in $schemes; do
        case $out in
        *"$s"*) passed=$((passed + 1)) ;;
        *) bad "tether info --device '$url' does not name $s: $out" ;;
        esac
    done
done

echo "$passed passed, $fail failed"
[ "$fail" -eq 0 ]
