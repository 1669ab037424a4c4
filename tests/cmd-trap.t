#!/bin/bash
# tests/cmd-trap.t - `uipc run` and the programs no preload reaches, and its
# seccomp modes (tools/run.c, entry/trap.c):
#   - a statically linked program (gcc -static, -static-pie; directly, through
#     PATH, as a script's interpreter) is refused with a message, also with
#     --trap (no SIGSYS handler would be loaded into it); --allow-static runs
#     it: its IPC reaches the kernel, kills it under --trap, fails (ENOSYS)
#     under --no-kernel-ipc; the dynamic linker run as a program is not
#     refused;
#   - --no-kernel-ipc: the kernel's IPC calls fail with ENOSYS (a system call
#     instruction), libc's names still reach uipc; with --trap too, the
#     instruction is served by uipc;
#   - someone else's filter that traps the System V calls with SIGSYS (as
#     Android's does): the library's handler serves them, without trap mode;
#   - --trap: an instruction is served by uipc; the filter needs no_new_privs
#     for a user without CAP_SYS_ADMIN only; UIPC_TRAP=1 in the environment
#     of a preloaded program (no uipc run) does the same.
. "$(dirname "$0")/cmd/tap.sh"
require_build
PROBE=$T_BUILD/tests/cmd/ipcprobe
STATIC=$T_BUILD/tests/cmd/ipcprobe-static
SPIE=$T_BUILD/tests/cmd/ipcprobe-spie
plan 24

if [ ! -x "$STATIC" ] || [ ! -x "$SPIE" ]; then
	make -s -C "$T_ROOT" B="$T_BUILD" cmd-static-progs >"$T_WORK/static.log" 2>&1
fi
if [ ! -x "$STATIC" ] || [ ! -x "$SPIE" ] || [ ! -x "$PROBE" ]; then
	for i in $(seq 24); do ok 1 "ipcprobe, ipcprobe-static (libc6-dev's libc.a) or -spie missing"; done
	diag <"$T_WORK/static.log"
	done_testing
	exit
fi

txt() { tr '\n' ' ' <"$1"; }

# run OUT ARGS...: $UIPC run ARGS, stdout and stderr in OUT, the status in RC
run() {
	local out=$1; shift
	("$UIPC" run "$@") >"$out" 2>&1
	RC=$?
}

o=$T_WORK/o
run "$o" -- "$STATIC" libc
is "$RC $(grep -c 'semget' "$o")" "126 0" "a static program is refused (status 126) and does not run"
like "$(txt "$o")" "ipcprobe-static is statically linked: no preloaded library reaches it.*kernel's IPC" \
	"the message says why"
run "$o" -- "$SPIE" libc
like "$RC $(txt "$o")" "^126 .*ipcprobe-spie is statically linked \(static-pie\)" "a static-pie program is refused"
run "$o" --trap -- "$STATIC" libc
like "$RC $(txt "$o")" "^126 .*--trap cannot serve it either: libuipc's SIGSYS handler is not loaded" \
	"with --trap too, with the reason"
PATH=$(dirname "$STATIC"):$PATH run "$o" -- ipcprobe-static libc
like "$RC $(txt "$o")" "^126 .*statically linked" "found through PATH: refused"
printf '#!%s\n' "$STATIC" >"$T_WORK/script"
chmod +x "$T_WORK/script"
run "$o" -- "$T_WORK/script"
like "$RC $(txt "$o")" "^126 .*statically linked \(the interpreter of .*script\)" \
	"a script whose interpreter is static: refused"
run "$o" -- /bin/sh -c 'exit 7'
is "$RC" 7 "a dynamic program runs (its status passed through)"
ldso=$(ls /lib64/ld-linux-*.so.* /lib/ld-linux-*.so.* 2>/dev/null | head -1)
if [ -n "$ldso" ]; then
	run "$o" -- "$ldso" "$PROBE" libc
	is "$RC $(cat "$o")" "0 libc semget = 0" "the dynamic linker run as a program ($ldso) is not refused"
else
	skip "the dynamic linker run as a program" "no ld-linux found"
fi

if have_kernel_ns; then
	out=$(unshare --ipc -- "$UIPC" run --allow-static -- "$STATIC" libc 2>"$T_WORK/err")
	like "$out / $(cat "$T_WORK/err")" "^libc semget = 0 / .*warning: .*statically linked: its System V IPC calls go to the kernel" \
		"--allow-static runs it, with a warning: its IPC is the kernel's"
else
	skip "--allow-static" "no kernel IPC namespace (unshare --ipc needs root)"
fi
run "$o" --allow-static --trap -- "$STATIC" libc
is "$RC $(grep -c '^libc semget' "$o")" "159 0" "--allow-static --trap: its first IPC call kills it (SIGSYS, 128+31)"
run "$o" --allow-static --no-kernel-ipc -- "$STATIC" libc raw
is "$(grep semget "$o" | tr '\n' ' ')" "libc semget = -1 ENOSYS raw semget = -1 ENOSYS " \
	"--allow-static --no-kernel-ipc: its IPC calls fail with ENOSYS"

# dynamic programs and the seccomp modes
new_ns
run "$o" --ns "$NS" --no-kernel-ipc -- "$PROBE" libc raw
is "$(tr '\n' ' ' <"$o")" "libc semget = 0 raw semget = -1 ENOSYS " \
	"--no-kernel-ipc: libc's semget reaches uipc, an instruction fails with ENOSYS"
N='[0-9]+'
run "$o" --ns "$NS" --trap -- "$PROBE" raw
like "$(txt "$o")" "^raw semget = $N \$" "--trap: an instruction is served"
run "$o" --ns "$NS" --trap --no-kernel-ipc -- "$PROBE" raw libc
like "$(txt "$o")" "^raw semget = $N libc semget = $N \$" \
	"--trap --no-kernel-ipc: an instruction is served, by uipc (the kernel's would fail)"
run "$o" --ns "$NS" --trap -- sh -c "$PROBE raw; exec $PROBE raw"
like "$(txt "$o")" "^raw semget = $N raw semget = $N \$" "--trap: a child and an exec'd image are served too"
new_ns
out=$(env UIPC_NS="$NS" UIPC_TRAP=1 UIPC_NO_KERNEL_IPC=1 LD_PRELOAD="$LIB" "$PROBE" raw 2>&1)
is "$out" "raw semget = 0" "UIPC_TRAP=1 and UIPC_NO_KERNEL_IPC=1 in a preloaded program's environment (no uipc run)"
out=$(env UIPC_NS="$NS" UIPC_NO_KERNEL_IPC=1 LD_PRELOAD="$LIB" "$PROBE" raw 2>&1)
is "$out" "raw semget = -1 ENOSYS" "UIPC_NO_KERNEL_IPC=1 alone: an instruction fails with ENOSYS"
out=$("$UIPC" run --trap -- grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status | tr '\t\n' '  ')
if [ "$(id -u)" = 0 ]; then
	is "$out" "NoNewPrivs: 0 Seccomp: 2 " "root (CAP_SYS_ADMIN): the filter without no_new_privs"
else
	is "$out" "NoNewPrivs: 1 Seccomp: 2 " "without CAP_SYS_ADMIN: no_new_privs set for the filter"
fi
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	nd=$UDIR/nobody
	chmod 0711 "$UDIR"
	mkdir "$nd" && chown nobody "$nd"
	out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
		env UIPC_DIR="$nd" "$UIPC" run --trap -- grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status |
		tr '\t\n' '  ')
	is "$out" "NoNewPrivs: 1 Seccomp: 2 " "user nobody: no_new_privs set for the filter"
	out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
		env UIPC_DIR="$nd" "$UIPC" run --trap -- "$PROBE" raw 2>&1)
	is "$out" "raw semget = 0" "user nobody: an instruction is served"
else
	skip "user nobody: no_new_privs" "not root"
	skip "user nobody: an instruction is served" "not root"
fi
# someone else's filter traps the System V calls with SIGSYS (Android's app
# filter does): libuipc's handler serves them, without trap mode
if have_kernel_ns; then
	out=$(unshare --ipc -- sh -c "$PROBE seal raw; echo status \$?" 2>/dev/null)
	is "$out" "status 159" "a program whose own filter traps semget, on the kernel: killed by SIGSYS"
else
	skip "the kernel side of a program whose own filter traps semget" "no kernel IPC namespace"
fi
new_ns
run "$o" --ns "$NS" -- "$PROBE" seal raw libc
like "$RC $(txt "$o")" "^0 raw semget = $N libc semget = $N \$" \
	"the same under uipc (no --trap): libuipc's SIGSYS handler serves the trapped calls"
run "$o" --help
like "$(txt "$o")" "--trap .*--no-kernel-ipc .*--allow-static" "uipc run --help lists --trap, --no-kernel-ipc, --allow-static"
# a 32-bit program: another ELF class than the library's
if echo 'int main(void){return 0;}' | gcc -m32 -x c - -o "$T_WORK/prog32" 2>/dev/null; then
	run "$o" -- "$T_WORK/prog32"
	like "$RC $(txt "$o")" "^126 .*is a 32-bit program" "a 32-bit program is refused"
else
	skip "a 32-bit program is refused" "gcc -m32 cannot link here"
fi
done_testing
