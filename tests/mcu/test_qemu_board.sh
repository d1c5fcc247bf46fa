#!/usr/bin/env bash
# scripts/qemu-board --board NAME / --list against the board table (device/mcu/boards/boards.txt):
# --list prints every board of the table with its QEMU machine and core; an unknown board is a
# usage error (exit 2) naming the boards; --board NAME starts the board's QEMU (its firmware
# from TETHER_BUILD_DIR) and prints a uart:// URL, and with --tcp-serial a tcp-serial:// URL
# whose port answers; --semihost-serial (the byte channel over semihosting's console) does the
# same on a firmware whose firmware.json names "channel_select" and is refused with a message on
# one without; both at once are a usage error; the script stops QEMU when it is stopped (no QEMU
# left behind).
# usage: test_qemu_board.sh SOURCE_DIR BUILD_DIR BOARD. Exit 77 without QEMU or firmware.
set -u
src=$1 build=$2 board=$3
script=$src/scripts/qemu-board
table=$src/device/mcu/boards/boards.txt
fail() {
    echo "FAIL: $*"
    exit 1
}
[ -f "$build/device/mcu/$board/tether-fw.elf" ] || { echo "SKIP: no firmware for $board"; exit 77; }
q=$(awk -v b="$board" '$1 == b { print $3 }' "$table")
command -v "$q" >/dev/null 2>&1 || { echo "SKIP: $q not installed"; exit 77; }

out=$("$script" --list) || fail "--list exited $?"
while read -r name _ _ machine core _; do
    case $name in '' | '#'*) continue ;; esac
    grep -Eq "^$name +$machine +$core\$" <<<"$out" || fail "--list lacks '$name $machine $core': $out"
done <"$table"

err=$("$script" --board no-such-board 2>&1)
rc=$?
[ $rc -eq 2 ] || fail "an unknown board exited $rc, want 2"
grep -q "unknown board 'no-such-board'" <<<"$err" || fail "unknown board message: $err"
grep -q "$board" <<<"$err" || fail "the message does not list the boards: $err"

run_board() { # starts the board with "$@", reads the first line into $url
    rm -f url.txt err.txt # (an old url.txt would be read before the new script truncates it)
    TETHER_BUILD_DIR=$build "$script" --icount --board "$board" "$@" >url.txt 2>err.txt &
    pid=$!
    url=
    for _ in $(seq 150); do
        if [ -f url.txt ] && [ "$(wc -l <url.txt)" -ge 1 ]; then
            url=$(head -n 1 url.txt)
            break
        fi
        sleep 0.1
    done
}
stop_board() {
    local qpid
    qpid=$(pgrep -P "$pid" -f "$q" | head -n 1)
    [ -n "$qpid" ] || fail "no $q under the script"
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    for _ in $(seq 20); do
        kill -0 "$qpid" 2>/dev/null || return 0
        sleep 0.1
    done
    fail "QEMU ($qpid) still runs after the script stopped"
}
work=$(mktemp -d "${TMPDIR:-/tmp}/qemu-board.XXXXXX")
cd "$work" || exit 1
trap 'kill -TERM "${pid:-0}" 2>/dev/null; rm -rf "$work"' EXIT

run_board
[[ $url == uart:///dev/pts/* ]] || fail "--board $board printed '$url' ($(cat err.txt))"
[ -c "${url#uart://}" ] || fail "${url#uart://} is not a terminal"
stop_board

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
run_board --tcp-serial "$port"
[ "$url" = "tcp-serial://127.0.0.1:$port" ] || fail "--tcp-serial printed '$url' ($(cat err.txt))"
(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || fail "nobody listens on port $port"
stop_board

err=$("$script" --tcp-serial "$port" --semihost-serial "$port" --board "$board" 2>&1)
rc=$?
[ $rc -eq 2 ] || fail "--tcp-serial with --semihost-serial exited $rc, want 2 ($err)"
if grep -q '"channel_select"' "$build/device/mcu/$board/firmware.json"; then
    run_board --semihost-serial "$port"
    [ "$url" = "tcp-serial://127.0.0.1:$port" ] || fail "--semihost-serial printed '$url' ($(cat err.txt))"
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || fail "nobody listens on port $port"
    stop_board
else
    err=$(TETHER_BUILD_DIR=$build "$script" --board "$board" --semihost-serial "$port" 2>&1)
    rc=$?
    [ $rc -eq 1 ] || fail "--semihost-serial on $board exited $rc, want 1 ($err)"
    grep -q "has no semihosting byte channel" <<<"$err" || fail "--semihost-serial message: $err"
fi
echo "qemu-board --board $board: --list, unknown board, pty, tcp-serial and semihost-serial: ok"
