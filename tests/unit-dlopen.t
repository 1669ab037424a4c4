#!/bin/bash
# tests/unit-dlopen.t - uipc's dlopen (entry/dlopen.c): a library loaded with
# RTLD_DEEPBIND (as PHP loads its sysvmsg/sysvsem/sysvshm extensions) must
# still reach uipc, not the kernel; and dlopen must keep libc's view of the
# caller: a bare name found through the calling program's RUNPATH, $ORIGIN
# expanded to the caller's directory; UIPC_KEEP_DEEPBIND=1 turns it off.  Builds a small program and library
# with cc in a temporary directory.
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$top/build/libuipc.so
uipc=$top/build/uipc
echo "1..5"
n=0 failed=0
ok() { echo "ok $((++n)) - $*"; }
nok() { failed=$((failed+1)); echo "not ok $((++n)) - $*"; }
if [ ! -f "$lib" ] || ! command -v cc >/dev/null; then
	echo "not ok 1 - $lib or cc missing"; exit 1
fi
w=$(mktemp -d /tmp/uipc-dlopen.XXXXXX)
trap 'rm -rf "$w"' EXIT
mkdir -p "$w/bin" "$w/lib" "$w/ns"
key=$(( (($$ & 0xffff) << 8) | 0x2d000000 ))
cat >"$w/q.c" <<'EOF'
#include <sys/msg.h>
int make_queue(int key) { return msgget(key, IPC_CREAT | 0600); }
EOF
cat >"$w/prog.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	/* first with RTLD_DEEPBIND (it is relocated then), by $ORIGIN */
	void *b = dlopen("$ORIGIN/../lib/libq.so", RTLD_NOW | RTLD_DEEPBIND);
	void *a = dlopen("libq.so", RTLD_NOW);				/* RUNPATH */
	int (*mk)(int);

	if (!a || !b) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	mk = (int (*)(int))dlsym(b, "make_queue");
	printf("loaded %d\n", mk(atoi(argv[1])) >= 0);
	return 0;
}
EOF
if ! cc -shared -fPIC -o "$w/lib/libq.so" "$w/q.c" ||
   ! cc -o "$w/bin/prog" "$w/prog.c" -Wl,-rpath,'$ORIGIN/../lib' -Wl,--enable-new-dtags; then
	echo "not ok 1 - cannot build the test program"; exit 1
fi
out=$("$uipc" run --dir "$w/ns" --ns dl -- "$w/bin/prog" "$key" 2>&1)
if [ "$out" = "loaded 1" ]; then
	ok "under uipc, dlopen finds a bare name through the caller's RUNPATH and expands \$ORIGIN"
else
	nok "under uipc: $out"
fi
hex=$(printf '0x%08x' "$key")
inu=$("$uipc" ipcs --dir "$w/ns" --ns dl -q | awk -v k="$hex" '$1 == k' | wc -l)
ink=$(awk -v k="$key" 'NR > 1 && $1 == k' /proc/sysvipc/msg | wc -l)
[ "$inu" = 1 ] && ok "msgget in a library loaded with RTLD_DEEPBIND reached uipc" ||
	nok "msgget from an RTLD_DEEPBIND library: not in uipc ($inu)"
[ "$ink" = 0 ] && ok "... and not the kernel" || {
	nok "... it went to the kernel"
	ipcrm -Q "$key" 2>/dev/null
}
out=$(unshare --ipc -- "$w/bin/prog" "$key" 2>&1)
[ "$out" = "loaded 1" ] && ok "the same program without uipc (kernel) works the same" ||
	nok "without uipc: $out"
# UIPC_KEEP_DEEPBIND=1 keeps the flag: that library's msgget then goes to the
# kernel (here a fresh kernel namespace, looked at before it goes away)
out=$(unshare --ipc -- sh -c 'UIPC_KEEP_DEEPBIND=1 "$1" run --dir "$2" --ns dl2 -- "$3" "$4" >/dev/null;
	awk -v k="$4" "NR > 1 && \$1 == k" /proc/sysvipc/msg | wc -l' sh "$uipc" "$w/ns" "$w/bin/prog" "$key")
[ "$out" = 1 ] && ok "UIPC_KEEP_DEEPBIND=1 keeps RTLD_DEEPBIND (the call reached the kernel)" ||
	nok "UIPC_KEEP_DEEPBIND=1: $out queues in the kernel"
[ $failed -eq 0 ]
