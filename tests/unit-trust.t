#!/bin/bash
# tests/unit-trust.t - the trust model of namespace files (issue 14), as two
# real unprivileged users A and B: whatever B plants where A's namespace and
# segment files go (a file, a symbolic or hard link, a namespace of its own,
# a shared namespace of the same name, segment and temporary file names), A's
# calls work in A's own namespace or fail with a message that names the file,
# and B never gets A's data.  Sysctl writes need the namespace's owner.  A
# group namespace lets its members attach each other's segments as the kernel
# does for the same modes, and SHM_RDONLY stays read-only (both differential
# against the kernel in `unshare --ipc`).
top=$(cd "$(dirname "$0")/.." && pwd)
n=0 failed=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); failed=$((failed+1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
check() { if [ "$1" = 0 ]; then ok "$2"; else shift 2; nok "$@"; fi; }
if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null || ! command -v runuser >/dev/null; then
	echo "1..0 # SKIP needs root, useradd and runuser (to be two real users)"; exit 0
fi
if [ ! -x "$top/build/tests/unit/trust_shm" ] || [ ! -f "$top/build/libuipc.so" ]; then
	echo "1..1"; echo "not ok 1 - build/libuipc.so or build/tests/unit/trust_shm missing: make all test-progs"; exit 1
fi

ua=uta$$ ub=utb$$ ug=utg$$
D=$(mktemp -d /dev/shm/uipc-trust.XXXXXX)
cleanup() {
	userdel "$ua" 2>/dev/null; userdel "$ub" 2>/dev/null
	groupdel "$ua" 2>/dev/null; groupdel "$ub" 2>/dev/null; groupdel "$ug" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
groupadd "$ug" && useradd -M -N -s /bin/sh -G "$ug" "$ua" && useradd -M -N -s /bin/sh -G "$ug" "$ub" ||
	{ echo "1..1"; echo "not ok 1 - cannot create the test users"; exit 1; }
# each its own primary group, as on Debian (USERGROUPS_ENAB)
groupadd "$ua" && groupadd "$ub" && usermod -g "$ua" "$ua" && usermod -g "$ub" "$ub"
A=$(id -u "$ua") B=$(id -u "$ub")

# the binaries, where both users can read them; $D is sticky and open to
# all, like /dev/shm
chmod 1777 "$D"
mkdir "$D/bin" && cp "$top/build/uipc" "$top/build/libuipc.so" "$top/build/tests/unit/trust_shm" "$D/bin/" &&
	ln -s libuipc.so "$D/bin/libuipc.so.0" &&	# uipc asks for the soname
	chmod 755 "$D/bin" && chmod a+rx "$D"/bin/*
lib=$D/bin/libuipc.so uipc=$D/bin/uipc tshm=$D/bin/trust_shm
export UIPC_NS_SIZE=128M
unset UIPC_NS UIPC_NS_FILE UIPC_DIR XDG_RUNTIME_DIR

# as USER, in $D (env is kept by runuser)
as() { local u=$1; shift; runuser -u "$u" -- env UIPC_DIR="$D" "$@"; }
# as USER with the library preloaded, as any program started under a wrapper
pre() { local u=$1; shift; as "$u" LD_PRELOAD="$lib" "$@"; }
fileA=$D/uipc-$A-default

# A's semaphore array: works, or fails clearly naming the file and its owner;
# B's file is never written
expect_refused() {	# what file regex cmd...
	local what=$1 f=$2 re=$3 out rc before after
	shift 3
	before=$(stat -c '%s %Y' "$f" 2>/dev/null; head -c 1M "$f" 2>/dev/null | md5sum)
	out=$("$@" 2>&1); rc=$?
	after=$(stat -c '%s %Y' "$f" 2>/dev/null; head -c 1M "$f" 2>/dev/null | md5sum)
	if [ "$rc" -ge 128 ]; then nok "$what: crashed ($rc)" "$out"
	elif [ "$rc" = 0 ]; then nok "$what: A's call went through" "$out"
	elif ! [[ "$out" =~ $re ]]; then nok "$what: message" "$out"
	elif [ "$before" != "$after" ]; then nok "$what: the planted file changed"
	else ok "$what: refused, clearly; B's file untouched"; fi
}

# ---- a plain file, a symbolic link, a hard link, B's valid namespace ----
as "$ub" sh -c "echo junk > $fileA"
expect_refused "a regular file of B's at A's private name" "$fileA" \
	"$fileA belongs to uid $B, not to this user \\($A\\)" pre "$ua" ipcmk -S 1
rm -f "$fileA"
as "$ub" "$uipc" ns create bns >/dev/null
pre "$ub" ipcmk -S 3 >/dev/null
as "$ub" ln -s "$D/uipc-$B-bns" "$fileA"
expect_refused "a symbolic link to B's namespace at A's name" "$D/uipc-$B-bns" \
	"$fileA is a symbolic link" pre "$ua" ipcmk -S 1
rm -f "$fileA"
as "$ub" ln "$D/uipc-$B-bns" "$fileA"
expect_refused "a hard link of B's namespace at A's name" "$D/uipc-$B-bns" \
	"$fileA has 2 links \\(uid $B\\)" pre "$ua" ipcmk -S 1
rm -f "$fileA"
as "$ub" cp --sparse=always "$D/uipc-$B-bns" "$fileA" && chmod 666 "$fileA"
expect_refused "B's valid namespace (mode 0666) copied to A's name" "$fileA" \
	"belongs to uid $B" pre "$ua" ipcmk -S 1
out=$(as "$ua" "$uipc" run -- true 2>&1); rc=$?
[ $rc = 1 ] && [[ "$out" == *"belongs to uid $B"* ]]
check $? "... uipc run refuses it too" "uipc run: status $rc" "$out"

# ---- the path inherited by children (UIPC_NS_FILE) under a wrapper ----
expect_refused "sh -c (preloaded) then ipcmk, B's file at A's name" "$fileA" \
	"belongs to uid $B" pre "$ua" sh -c 'ipcmk -S 1'
expect_refused "timeout (preloaded) then ipcmk" "$fileA" \
	"belongs to uid $B" pre "$ua" timeout 20 ipcmk -S 1
expect_refused "UIPC_NS_FILE naming B's own namespace, inherited" "$D/uipc-$B-bns" \
	"belongs to uid $B" pre "$ua" UIPC_NS_FILE="$D/uipc-$B-bns" sh -c 'ipcmk -S 1'
rm -f "$fileA"

# ---- a shared namespace of the same name: never used for a private name ----
as "$ub" "$uipc" ns create --shared --mode 0666 default >/dev/null
out=$(pre "$ua" sh -c 'ipcmk -S 1' 2>&1)
check $? "B's shared namespace 'default' planted: A's call works" "A's call failed" "$out"
[ -f "$fileA" ] && [ "$(stat -c %u:%a "$fileA")" = "$A:600" ]
check $? "... in A's own private namespace (uid $A, mode 0600)" "no private file $fileA"
out=$(as "$ub" "$uipc" ipcs -s --ns shared:default 2>&1)
[[ "$out" != *"0x"* ]] && [[ "$out" == *"Semaphore Arrays"* ]]
check $? "... and B's shared namespace holds nothing of A's" "B sees:" "$out"
as "$ub" "$uipc" ns rm shared:default
rm -f "$fileA" "$fileA".*

# ---- segment and temporary file names taken before A gets to them ----
# a shim makes getrandom() predictable (B "predicts" the numbers): B takes
# the first names A would draw; A's creation and shmget draw again
cat > "$D/fixed.c" <<'EOF'
#include <stddef.h>
#include <string.h>
#include <sys/types.h>
static unsigned long long next = 0x1001;
ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
	(void)flags;
	memset(buf, 0, len);
	memcpy(buf, &next, len < 8 ? len : 8);
	next += 2;
	return (ssize_t)len;
}
EOF
cc -shared -fPIC -o "$D/bin/fixed.so" "$D/fixed.c" && chmod a+r "$D/bin/fixed.so"
as "$ub" sh -c 'for i in 0 1 2 3 4; do : > "$1.tmp.$(printf %016x $((0x1001 + 2 * i)))"; done
	for i in $(seq 0 13); do : > "$1.shm-$(printf %x $((0x1001 + 2 * i)))"; done' - "$fileA"
out=$(as "$ua" LD_PRELOAD="$D/bin/fixed.so:$lib" "$tshm" put 0x7001 0600 secret-of-A 2>&1)
check $? "predicted temporary and segment names pre-created by B: A's namespace and shmget work" \
	"A's call failed" "$out"
seg=$(find "$D" -maxdepth 1 -name "uipc-$A-default.shm-*" -user "$A" | head -1)
[ -n "$seg" ] && [ "$(stat -c %a "$seg")" = 600 ] && ! grep -rqs secret-of-A "$D"/uipc-$A-default.*tmp* &&
	! find "$D" -maxdepth 1 -user "$B" -size +0 -name "uipc-$A-*" | grep -q .
check $? "... the segment is A's own file (mode 0600), B's files stay empty" "segment file: $seg"
out=$(as "$ub" cat "$seg" 2>&1)
[[ "$out" != *secret-of-A* ]]
check $? "... and B cannot read it" "B read: $out"
out=$(pre "$ua" "$tshm" get 0x7001 2>&1)
[ "$out" = "get: secret-of-A" ]
check $? "... A reads its data back" "$out"
# without the shim (random names), planted names in bulk change nothing
as "$ub" sh -c 'for i in $(seq 1 200); do : > "$1.shm-$i"; done' - "$fileA"
out=$(for i in 1 2 3 4 5 6 7 8; do pre "$ua" "$tshm" put $((0x7100 + i)) 0600 x || exit 1; done 2>&1)
check $? "200 squatted segment names: 8 more segments of A's all created" "$out"
as "$ua" "$uipc" ns rm default

# ---- sysctl writes: the namespace's owner only ----
as "$ua" "$uipc" ns create --shared --mode 0666 sys
out=$(as "$ub" "$uipc" sysctl --ns shared:sys kernel.msgmni=0 2>&1); rc=$?
[ $rc = 1 ] && [[ "$out" == *"Operation not permitted"* ]]
check $? "B (a member, not the owner) sets kernel.msgmni: EPERM" "status $rc" "$out"
out=$(pre "$ua" UIPC_NS=shared:sys ipcmk -Q 2>&1)
check $? "... and A's msgget still works" "$out"
out=$(as "$ua" "$uipc" sysctl --ns shared:sys kernel.msgmni=5 2>&1)
[ "$out" = "kernel.msgmni = 5" ]
check $? "the owner (A) sets kernel.msgmni" "$out"
out=$(as "$ub" "$uipc" sysctl --ns shared:sys -n kernel.msgmni 2>&1)
[ "$out" = 5 ]
check $? "... and B reads it" "$out"
as "$ua" "$uipc" ns rm shared:sys

# ---- a group namespace (mode 0660, both users in the group) ----
# the same steps on the kernel and under uipc: B's segments with modes
# 0666 and 0600, A's with 0660 and 0640, attached by the other user
steps() {	# steps RUNNER: RUNNER USER CMD...
	local r=$1
	$r "$ub" "$tshm" put 0x7201 0666 from-B-0666
	$r "$ub" "$tshm" put 0x7202 0600 from-B-0600
	$r "$ua" "$tshm" put 0x7203 0660 from-A-0660
	$r "$ua" "$tshm" put 0x7204 0640 from-A-0640
	$r "$ua" "$tshm" get 0x7201
	$r "$ua" "$tshm" get 0x7202
	$r "$ua" "$tshm" get 0x7202 ro
	$r "$ub" "$tshm" get 0x7203
	$r "$ub" "$tshm" get 0x7204 ro
	$r "$ub" "$tshm" get 0x7204
	for k in 0x7201 0x7202; do $r "$ub" "$tshm" rm $k; done
	for k in 0x7203 0x7204; do $r "$ua" "$tshm" rm $k; done
}
kern() { local u=$1; shift; runuser -u "$u" -- "$@"; }
grp() { local u=$1; shift; pre "$u" UIPC_NS=shared:grp "$@"; }
if unshare --ipc true 2>/dev/null; then
	export -f steps kern
	export ua ub tshm
	kout=$(unshare --ipc bash -c 'steps kern' 2>&1)
	as "$ua" "$uipc" ns create --shared --mode 0660 grp && chgrp "$ug" "$D/uipc-shared-grp"
	uout=$(steps grp 2>&1)
	[ "$kout" = "$uout" ] && [[ "$kout" == *"get: from-B-0666"* ]]
	check $? "group namespace: each user attaches the other's segments as the kernel allows" \
		"kernel and uipc differ" "kernel:" "$kout" "uipc:" "$uout"
	pre "$ub" UIPC_NS=shared:grp "$tshm" put 0x7301 0666 g >/dev/null
	f=$(find "$D" -maxdepth 1 -name 'uipc-shared-grp.shm-*' -user "$B" | head -1)
	[ -n "$f" ] && [ "$(stat -c %G:%a "$f")" = "$ug:660" ]
	check $? "... a member's segment file has the namespace's group and mode" \
		"$f: $(stat -c %G:%a "$f" 2>&1)"
	as "$ua" "$uipc" ns rm shared:grp
	as "$ub" "$uipc" ns rm shared:grp 2>/dev/null
	rm -f "$D"/uipc-shared-grp*
	# ---- SHM_RDONLY + mprotect(PROT_WRITE) ----
	kout=$(unshare --ipc "$tshm" rdonly 2>&1)
	uout=$(as "$ua" "$uipc" run -- "$tshm" rdonly 2>&1)
	[ "$kout" = "$uout" ] && [[ "$kout" == *"mprotect(whole, RW) = -1 EACCES"* ]]
	check $? "SHM_RDONLY then mprotect(PROT_WRITE): the kernel's EACCES" \
		"kernel and uipc differ" "kernel:" "$kout" "uipc:" "$uout"
	as "$ua" "$uipc" ns rm default
else
	nok "unshare --ipc is not available: the differential checks cannot run"
fi

# ---- a private namespace in a directory others can write, not sticky ----
mkdir -m 0777 "$D/open"
out=$(runuser -u "$ua" -- env UIPC_DIR="$D/open" LD_PRELOAD="$lib" ipcmk -S 1 2>&1); rc=$?
[ $rc = 1 ] && [[ "$out" == *"$D/open can be written by other users and is not sticky"* ]] &&
	[ -z "$(ls -A "$D/open")" ]
check $? "a world-writable, non-sticky directory is refused" "status $rc" "$out"

# ---- the default directory: the user's own runtime directory ----
x=$D/run-$A
mkdir -m 0700 "$x" && chown "$ua" "$x"
out=$(runuser -u "$ua" -- env XDG_RUNTIME_DIR="$x" "$uipc" ns path)
[ "$out" = "$x/uipc-$A-default" ]
check $? "non-root, \$XDG_RUNTIME_DIR of its own with mode 0700: private namespaces go there" "$out"
out=$(runuser -u "$ua" -- env XDG_RUNTIME_DIR="$x" "$uipc" ns path shared:team)
[ "$out" = "/dev/shm/uipc-shared-team" ]
check $? "... shared ones stay in /dev/shm" "$out"
chmod 0755 "$x"
out=$(runuser -u "$ua" -- env XDG_RUNTIME_DIR="$x" "$uipc" ns path)
[ "$out" = "/dev/shm/uipc-$A-default" ]
check $? "... a runtime directory others can enter is not used: /dev/shm" "$out"
out=$(env XDG_RUNTIME_DIR="$x" "$uipc" ns path)
[ "$out" = "/dev/shm/uipc-0-default" ]
check $? "root keeps /dev/shm" "$out"

# nothing left of A's or B's but what this test removes with $D
left=$(find /dev/shm -maxdepth 1 \( -user "$A" -o -user "$B" \) 2>/dev/null)
[ -z "$left" ]
check $? "no file of A or B left outside the test directory" "$left"

echo "1..$n"
[ $failed -eq 0 ]
