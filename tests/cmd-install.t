#!/bin/bash
# tests/cmd-install.t - `make install` into a temporary DESTDIR and PREFIX:
# the versioned library and its links (soname libuipc.so.0), uipc, uipc.h,
# uipc.pc (pkg-config's answer, and a program built with it that runs on uipc),
# the man pages (where man finds them); then the INSTALLED uipc runs a real
# program (util-linux ipcmk) in a namespace of this run and preloads the
# installed library (seen in the program's /proc/self/maps); `make uninstall`
# removes exactly what install put there (files of others stay).  Everything
# goes under this script's temporary directories, removed at exit.
. "$(dirname "$0")/cmd/tap.sh"
require_build
plan 26

for t in make pkg-config readelf ldd ipcmk man "${CC:-cc}"; do
	if ! command -v "$t" >/dev/null; then
		echo "not ok 1 - $t is missing (see the apt-get line of .ci/run)"
		exit 1
	fi
done

# A make of its own: not the jobserver or flags of a make that runs prove.
unset MAKEFLAGS MFLAGS MAKELEVEL
MAKEVARS=()
[ -n "${UIPC_TEST_BUILD:-}" ] && MAKEVARS+=("B=$T_BUILD")
[ -n "${CC:-}" ] && MAKEVARS+=("CC=$CC")

DEST=$T_WORK/dest
# a prefix that exists nowhere on this machine: whatever is found under it can
# only come from DEST
PREFIX=/uipc-test-install-$$-$RANDOM/usr
while [ -e "$PREFIX" ]; do PREFIX=/uipc-test-install-$$-$RANDOM/usr; done
P=$DEST$PREFIX
NS=install-$$-$RANDOM
uid=$(id -u)

# files of others in the directories install writes to: they must survive
mkdir -p "$P/bin" "$P/lib" "$P/share/man/man1"
echo other >"$P/bin/other-tool"
echo other >"$P/lib/libother.so.1"
echo other >"$P/share/man/man1/other.1"
find "$DEST" ! -type d | sort >"$T_WORK/others"

# ---- install
make -C "$T_ROOT" "${MAKEVARS[@]}" install DESTDIR="$DEST" PREFIX="$PREFIX" \
	>"$T_WORK/install.log" 2>&1
rc=$?
is "$rc" 0 "make install DESTDIR=... PREFIX=... succeeds"
[ "$rc" = 0 ] || tail -20 "$T_WORK/install.log" | diag

real=$(readlink "$P/lib/libuipc.so.0")
like "$real" '^libuipc\.so\.0\.[0-9]+\.[0-9]+$' "lib/libuipc.so.0 is a relative link to libuipc.so.0.MINOR.PATCH"
if [ -f "$P/lib/$real" ] && [ ! -L "$P/lib/$real" ] && cmp -s "$P/lib/$real" "$LIB"; then
	ok 0 "... which is a regular file, the library that was built"
else
	ok 1 "... which is a regular file, the library that was built"
fi
is "$(readlink "$P/lib/libuipc.so")" "libuipc.so.0" "lib/libuipc.so (for -luipc) links to libuipc.so.0"
soname=$(readelf -d "$P/lib/$real" 2>&1 | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
is "$soname" "libuipc.so.0" "the installed library's soname is libuipc.so.0"

if [ -f "$P/bin/uipc" ] && [ -x "$P/bin/uipc" ]; then ok 0 "bin/uipc is installed, executable"; else ok 1 "bin/uipc is installed, executable"; fi
resolved=$(ldd "$P/bin/uipc" 2>&1 | awk '$1 == "libuipc.so.0" { print $3 }')
is "$(readlink -f "$resolved")" "$(readlink -f "$P/lib/$real")" "ldd: the installed uipc loads the installed libuipc.so.0"
cmp -s "$P/include/uipc.h" "$T_ROOT/include/uipc.h"
is "$?" 0 "include/uipc.h is installed"
if cmp -s "$P/share/man/man1/uipc.1" "$T_ROOT/man/uipc.1" &&
   cmp -s "$P/share/man/man7/uipc.7" "$T_ROOT/man/uipc.7"; then
	ok 0 "the man pages uipc(1) and uipc(7) are installed"
else
	ok 1 "the man pages uipc(1) and uipc(7) are installed"
fi
found=$(man -M "$P/share/man" -w 1 uipc 2>&1; man -M "$P/share/man" -w 7 uipc 2>&1)
is "$found" "$P/share/man/man1/uipc.1
$P/share/man/man7/uipc.7" "man finds both pages in the installed MANDIR"

# ---- pkg-config
export PKG_CONFIG_PATH=$P/lib/pkgconfig
unset PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR
is "$(pkg-config --variable=pcfiledir uipc 2>&1)" "$P/lib/pkgconfig" "pkg-config finds the installed uipc.pc"
flags=$(pkg-config --cflags --libs uipc 2>&1)
is "$(echo $flags)" "-I$PREFIX/include -L$PREFIX/lib -luipc" "pkg-config --cflags --libs uipc: the final PREFIX's paths"
version=$(pkg-config --modversion uipc 2>&1)
is "libuipc.so.$version" "$real" "pkg-config --modversion is the installed library's version"
# build a program with those flags (under DESTDIR: pkg-config's sysroot) and run it
cat >"$T_WORK/prog.c" <<'EOF'
#include <stdio.h>
#include <sys/sem.h>
#include <uipc.h>

int main(void)
{
	char path[4096];
	int a = semget(IPC_PRIVATE, 2, 0600);     /* the libc name, bound to libuipc */
	int b = uipc_semget(IPC_PRIVATE, 3, 0600);

	if (a < 0 || b < 0 || uipc_ns_path(NULL, path, sizeof(path)) != 0)
		return 1;
	printf("%d %d %s\n", a, b, path);
	return 0;
}
EOF
PKG_CONFIG_SYSROOT_DIR=$DEST "${CC:-cc}" -Wall -Werror -o "$T_WORK/prog" "$T_WORK/prog.c" \
	$(PKG_CONFIG_SYSROOT_DIR=$DEST pkg-config --cflags --libs uipc) 2>"$T_WORK/cc.err"
is "$?" 0 "a program builds with pkg-config's flags against the installed uipc.h and -luipc"
[ -s "$T_WORK/cc.err" ] && diag <"$T_WORK/cc.err"
out=$(LD_LIBRARY_PATH=$P/lib UIPC_DIR=$UDIR UIPC_NS=$NS-pc "$T_WORK/prog" 2>&1)
is "$out" "0 1 $(readlink -f "$UDIR")/uipc-$uid-$NS-pc" "... and its semget and uipc_semget make arrays 0 and 1 in a uipc namespace"
nsems=$("$P/bin/uipc" ipcs --ns "$NS-pc" --dir "$UDIR" -s | awk '/^0x/ { printf "%s:%s ", $2, $5 }')
is "$nsems" "0:2 1:3 " "... which the installed uipc ipcs lists"

# ---- the installed uipc runs a real program on the installed library
out=$("$P/bin/uipc" run --ns "$NS" --dir "$UDIR" -- ipcmk -S 1 2>&1)
like "$out" '^Semaphore id: [0-9]+$' "installed uipc run -- ipcmk -S 1 (util-linux) creates an array"
id=${out##* }
row=$("$P/bin/uipc" ipcs --ns "$NS" --dir "$UDIR" -s | awk -v id="$id" '/^0x/ && $2 == id')
like "$row" "^0x[0-9a-f]{8} +$id +[^ ]+ +644 +1 *\$" "installed uipc ipcs shows it: that id, mode 644, 1 semaphore"
key=${row%% *}
if [ "${key:-0x00000000}" != 0x00000000 ] && ! ipcs -s | grep -q "^$key "; then
	ok 0 "... in uipc's namespace, not in the kernel's"
else
	ok 1 "... in uipc's namespace, not in the kernel's"
	echo "key '$key'" | diag
fi
lib_real=$(readlink -f "$P/lib/$real")
out=$("$P/bin/uipc" run --ns "$NS" --dir "$UDIR" -- sh -c 'echo "$LD_PRELOAD"' 2>&1)
is "$out" "$lib_real" "installed uipc run preloads the installed library (LD_PRELOAD)"
"$P/bin/uipc" run --ns "$NS" --dir "$UDIR" -- cat /proc/self/maps >"$T_WORK/maps" 2>&1
if grep -qF " $lib_real" "$T_WORK/maps" && ! grep -qF "$(readlink -f "$LIB")" "$T_WORK/maps"; then
	ok 0 "... mapped in the program (/proc/self/maps), and the build tree's is not"
else
	ok 1 "... mapped in the program (/proc/self/maps), and the build tree's is not"
	grep -F uipc "$T_WORK/maps" | diag
fi
out=$(UIPC_LIB=$LIB "$P/bin/uipc" run --ns "$NS" --dir "$UDIR" -- sh -c 'echo "$LD_PRELOAD"' 2>&1)
is "$out" "$(readlink -f "$LIB")" "UIPC_LIB still overrides the installed library"

"$P/bin/uipc" ns rm --dir "$UDIR" "$NS" "$NS-pc"
is "$?" 0 "installed uipc ns rm removes the test's namespaces"
left=$(cd "$UDIR" && ls -A)
is "$left" "" "... leaving no namespace or segment file"

# ---- uninstall
make -C "$T_ROOT" "${MAKEVARS[@]}" uninstall DESTDIR="$DEST" PREFIX="$PREFIX" \
	>"$T_WORK/uninstall.log" 2>&1
rc=$?
is "$rc" 0 "make uninstall succeeds"
[ "$rc" = 0 ] || tail -20 "$T_WORK/uninstall.log" | diag
find "$DEST" ! -type d | sort >"$T_WORK/after"
if cmp -s "$T_WORK/others" "$T_WORK/after"; then
	ok 0 "make uninstall removes every file and link install made, and only those"
else
	ok 1 "make uninstall removes every file and link install made, and only those"
	diff "$T_WORK/others" "$T_WORK/after" | diag
fi
rm -rf "$DEST"
done_testing
