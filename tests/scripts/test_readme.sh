#!/bin/bash
# Runs README.md's command lines as a new user would, after the build, and fails when one breaks.
#
# Every line of the ```sh blocks of README.md runs in a fresh temporary directory laid out like
# a checkout after `scripts/test`'s build: examples/ and scripts/ are the sources', build/ is the
# build tree under test. Changed on the way, and only this: the port 9090 of the README's tetherd
# becomes a free port of 127.0.0.1, and the board's uart:///dev/pts/N the URL that
# scripts/qemu-board prints. The set-up lines (scripts/demo, scripts/test: they built what this
# runs) are not run, and the board lines only when qemu-system-arm and the firmware build are
# there (said so otherwise). A line must exit 0, or the N of an "(exit N)" in its comment, and
# leave every file it names after -o, --out, --svg, --json and --log. A line ending in "&" starts
# a server: the next line runs once it is listening (tetherd: the port; qemu-board: its URL).
# Every server started is stopped on every way out, and the directory removed; temporary
# directories of the commands (TMPDIR) must be gone when they end.
# usage: test_readme.sh SOURCE_DIR BUILD_DIR
set -u
root=$1
build=$2
fail=0
passed=0
pids=()
work=$(mktemp -d "${TMPDIR:-/tmp}/tether-readme-XXXXXX") || exit 1
stop_servers() {
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null
    done
    for p in "${pids[@]}"; do
        wait "$p" 2>/dev/null
    done
    pids=()
}
cleanup() {
    stop_servers
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

cd "$work" || exit 1
ln -s "$root/examples" examples
ln -s "$root/scripts" scripts
ln -s "$build" build
mkdir tmp
export TMPDIR=$work/tmp
unset TETHER_DEVICE TETHER_TOKEN_FILE TETHER_FIRMWARE TETHER_TETHERD

# a free port: one the kernel gives a tetherd that is then stopped
"$build/device/tetherd/tetherd" --tcp 127.0.0.1:0 --port-file port --quiet 2>/dev/null &
probe=$!
for _ in $(seq 200); do [ -s port ] && break; sleep 0.05; done
kill "$probe" 2>/dev/null
wait "$probe" 2>/dev/null
port=$(cat port 2>/dev/null)
[ -n "$port" ] || { echo "FAIL: no free port from tetherd --port-file"; exit 1; }
rm -f port

board=yes
why=
command -v qemu-system-arm >/dev/null 2>&1 || { board=; why="no qemu-system-arm"; }
[ -f "$build/device/mcu/mps2-an385/tether-fw.elf" ] || { board=; why="no firmware build (TETHER_WITH_MCU)"; }
board_url=

# the lines of the ```sh blocks
awk '/^```sh/ { on = 1; next } /^```/ { on = 0 } on && NF' "$root/README.md" >lines
[ -s lines ] || { echo "FAIL: README.md has no \`\`\`sh block"; exit 1; }

n=0
while IFS= read -r line <&3; do
    n=$((n + 1))
    case $line in
    scripts/demo* | scripts/test*)
        echo "-- line $n not run (the set-up, which built this): $line"
        continue ;;
    esac
    if [[ $line == *qemu-board* || $line == *uart://* ]] && [ -z "$board" ]; then
        echo "-- line $n skipped ($why): $line"
        continue
    fi
    run=${line//127.0.0.1:9090/127.0.0.1:$port}
    [ -n "$board_url" ] && run=${run//uart:\/\/\/dev\/pts\/N/$board_url}
    want=0
    [[ $line =~ \#.*\(exit\ ([0-9]+)\) ]] && want=${BASH_REMATCH[1]}
    echo "-- line $n: $run"
    if [[ $run =~ ^[A-Za-z_][A-Za-z0-9_]*=[^\ ]*$ ]]; then # a variable, e.g. T=...
        eval "export $run"
        continue
    fi
    code=${run%%#*}
    if [[ $code =~ \&[[:space:]]*$ ]]; then # a server, in the background
        eval "$run" >"bg$n.log" 2>&1 </dev/null 3<&-
        pids+=($!)
        ok=
        for _ in $(seq 400); do
            if [[ $run == *qemu-board* ]]; then
                board_url=$(grep -o 'uart://[^ ]*' "bg$n.log" | head -1)
                [ -n "$board_url" ] && { ok=1; break; }
            elif (exec 5<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
                ok=1
                break
            fi
            kill -0 "${pids[-1]}" 2>/dev/null || break
            sleep 0.05
        done
        if [ -z "$ok" ]; then
            bad "line $n: the server did not come up:"
            cat "bg$n.log"
            break # what follows needs it
        fi
        passed=$((passed + 1))
        continue
    fi
    t0=$SECONDS
    timeout 300 bash -c "$run" >"out$n.log" 2>&1 </dev/null 3<&-
    rc=$?
    echo "   exit $rc after $((SECONDS - t0)) s"
    if [ "$rc" -ne "$want" ]; then
        bad "line $n exited $rc, want $want: $run"
        tail -20 "out$n.log"
        continue
    fi
    missing=
    read -r -a words <<<"$code"
    for ((k = 0; k + 1 < ${#words[@]}; k++)); do
        case ${words[k]} in
        -o | --out | --svg | --json | --log)
            f=${words[k + 1]#*=} # NAME=FILE
            [ -e "$f" ] || missing="$missing $f" ;;
        esac
    done
    if [ -n "$missing" ]; then
        bad "line $n left no$missing: $run"
        tail -5 "out$n.log"
        continue
    fi
    passed=$((passed + 1))
done 3<lines

stop_servers # (qemu-board keeps a directory while it runs)
left=$(ls -A tmp)
[ -z "$left" ] || bad "temporary directories left behind: $left"
echo "$passed passed, $fail failed"
[ "$fail" -eq 0 ]
