#!/bin/sh
# Checks every script of scripts/ for --help and -h: exit 0, a usage text on stdout, and no work
# started (no "setup:" line from the package check, nothing built, no device). An unknown option
# must exit 2. A script that ran its work on --help would print setup's line or take minutes.
set -u
root=$1
tetherd=${2:-}
version=${3:-}
fail=0
passed=0
check() { # script, flag, want exit code, text the output must contain
    out=$("$root/scripts/$1" $2 2>&1 </dev/null)
    rc=$?
    if [ "$rc" -ne "$3" ]; then
        echo "FAIL: scripts/$1 $2 exited $rc, want $3"; echo "$out" | head -5; fail=$((fail + 1)); return
    fi
    case $out in
    *"$4"*) ;;
    *) echo "FAIL: scripts/$1 $2: no '$4' in:"; echo "$out" | head -5; fail=$((fail + 1)); return ;;
    esac
    if printf '%s\n' "$out" | grep -q -e '^setup: ' -e '^== configure' -e '^== bench'; then
        echo "FAIL: scripts/$1 $2 started the work:"; echo "$out" | head -5; fail=$((fail + 1)); return
    fi
    passed=$((passed + 1))
}
for s in demo bench test setup qemu-board check-style conformance; do
    [ -x "$root/scripts/$s" ] || { echo "FAIL: scripts/$s missing or not executable"; fail=$((fail + 1)); continue; }
    for flag in --help -h; do
        check "$s" "$flag" 0 "sage"
    done
done
check demo --no-such-option 2 "try --help"
check bench --no-such-option 2 "try --help"
check bench no-such-benchmark 2 "unknown benchmark"
check qemu-board --no-such-option 2 "unknown option"
check setup --no-such-option 2 "try --help"
check check-style --no-such-option 2 "unknown option"
check conformance --no-such-option 2 "try --help"
check conformance no-such-abi 2 "unknown ABI"
check conformance "--backend no-such-backend" 2 "unknown backend"
check conformance "--backend opencl packed" 2 "takes no ABI"
check conformance "--backend opencl --help" 0 "sage"
if [ -n "$tetherd" ]; then
    for flag in --help -h; do
        out=$("$tetherd" $flag 2>&1 </dev/null); rc=$?
        case "$rc:$out" in
        "0:usage: tetherd"*) passed=$((passed + 1)) ;;
        *) echo "FAIL: tetherd $flag exited $rc: $out" | head -3; fail=$((fail + 1)) ;;
        esac
    done
    out=$("$tetherd" --version 2>&1 </dev/null); rc=$?
    case "$rc:$out" in
    "0:tetherd $version (protocol "*) passed=$((passed + 1)) ;;
    *) echo "FAIL: tetherd --version exited $rc: $out"; fail=$((fail + 1)) ;;
    esac
    out=$("$tetherd" --no-such-option 2>&1 </dev/null); rc=$?
    if [ "$rc" -eq 2 ]; then passed=$((passed + 1)); else
        echo "FAIL: tetherd --no-such-option exited $rc"; fail=$((fail + 1)); fi
fi
echo "$passed passed, $fail failed"
[ "$fail" -eq 0 ]
