#!/bin/bash
# tests/cmd-run.t - `uipc run`: exit status passed through, LD_PRELOAD and
# UIPC_NS / UIPC_DIR set for the command, clear errors (library not found,
# command not found -> 127, bad namespace name, namespace that cannot be
# opened), namespaces kept apart; and the command's own usage errors.
. "$(dirname "$0")/cmd/tap.sh"
require_build
plan 26

# exit status
"$UIPC" run -- true
is "$?" 0 "run -- true exits 0"
"$UIPC" run -- sh -c 'exit 7'
is "$?" 7 "run passes the exit status through"
"$UIPC" run sh -c 'exit 3'
is "$?" 3 "run without -- works too"
rc=$(sh -c '"$0" run -- sh -c "kill -TERM \$\$"; echo $?' "$UIPC" 2>/dev/null)
is "$rc" $((128 + 15)) "a command killed by a signal is seen as such"

# environment
out=$("$UIPC" run -- sh -c 'echo "$LD_PRELOAD"')
is "$out" "$(readlink -f "$LIB")" "LD_PRELOAD is the absolute path of libuipc.so next to uipc"
out=$(LD_PRELOAD=libm.so.6 "$UIPC" run -- sh -c 'echo "$LD_PRELOAD"')
is "$out" "$(readlink -f "$LIB"):libm.so.6" "an existing LD_PRELOAD is kept, after libuipc"
out=$(LD_PRELOAD="libm.so.6 $(readlink -f "$LIB")" "$UIPC" run -- sh -c 'echo "$LD_PRELOAD"')
is "$out" "$(readlink -f "$LIB"):libm.so.6" "libuipc is put first, and not twice, when already preloaded"
out=$("$UIPC" run --ns envtest --dir "$UDIR" -- sh -c 'echo "$UIPC_NS $UIPC_DIR"')
is "$out" "envtest $(readlink -f "$UDIR")" "--ns and --dir set UIPC_NS and an absolute UIPC_DIR"
out=$(cd "$UDIR" && "$UIPC" run --dir . -- sh -c 'echo "$UIPC_DIR"')
is "$out" "$(readlink -f "$UDIR")" "a relative --dir is made absolute"
out=$("$UIPC" --ns glob run -- sh -c 'echo "$UIPC_NS"')
is "$out" "glob" "--ns before the subcommand works too"

# library lookup
err=$(UIPC_LIB=/nonexistent/libuipc.so "$UIPC" run -- true 2>&1)
rc=$?
is "$rc" 1 "UIPC_LIB pointing nowhere: exit 1"
like "$err" "library not found.*/nonexistent/libuipc.so" "... and the message says where it looked"
cp "$LIB" "$T_WORK/libcopy.so"
out=$(UIPC_LIB=$T_WORK/libcopy.so "$UIPC" run -- sh -c 'echo "$LD_PRELOAD"')
is "$out" "$T_WORK/libcopy.so" "UIPC_LIB chooses the library"

# command not found
err=$("$UIPC" run -- no-such-command-uipc-test 2>&1)
rc=$?
is "$rc" 127 "command not found: exit 127"
like "$err" "no-such-command-uipc-test: command not found" "... with a shell-like message"
"$UIPC" run -- "$T_WORK" 2>/dev/null
is "$?" 126 "a command that cannot be executed: exit 126"

# namespace checks before exec
err=$("$UIPC" run --ns 'bad/name' -- true 2>&1)
rc=$?
is "$rc" 1 "an invalid namespace name: exit 1"
like "$err" "invalid namespace name 'bad/name'" "... with a clear message"
err=$("$UIPC" run --dir "$UDIR/missing-dir" -- true 2>&1)
rc=$?
is "$rc" 1 "a namespace directory that does not exist: exit 1"
like "$err" "cannot open namespace 'default'.*missing-dir" "... says which namespace and where"

# namespaces are kept apart
"$UIPC" run --ns runA -- "$FIX" sem:0x5151:2:600
"$UIPC" run --ns runB -- "$FIX" sem:0x6161:3:600
a=$("$UIPC" ipcs --ns runA -s | grep -c '^0x')
b=$("$UIPC" ipcs --ns runB -s)
like "$a" '^1$' "an object made under --ns A is seen there"
if printf '%s' "$b" | grep -q 0x00005151; then ok 1 "... and not under --ns B"; else ok 0 "... and not under --ns B"; fi

# --ns/--dir apply before anything is opened: nothing appears in the
# directory (or under the name) the environment gave at start
other=$(mktemp -d /dev/shm/uipc-cmd-other.XXXXXX)
UIPC_DIR=$other "$UIPC" run --dir "$UDIR" --ns elsewhere -- true
is "$(ls "$other" | wc -l)" 0 "run --dir D --ns N creates no namespace in \$UIPC_DIR's directory"
UIPC_DIR=$other "$UIPC" ipcmk --dir "$UDIR" -S 1 >/dev/null
is "$(ls "$other" | wc -l) $("$UIPC" ipcs -s | grep -c '^0x')" "0 1" "ipcmk --dir D (no --ns) makes its object in D"
rm -rf "$other"

# usage
"$UIPC" no-such-subcommand 2>"$T_WORK/err" >/dev/null
is "$?" 2 "unknown command: exit 2"
like "$(cat "$T_WORK/err")" "unknown command 'no-such-subcommand'" "... with usage on stderr"
done_testing
