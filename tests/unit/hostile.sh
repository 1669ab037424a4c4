# tests/unit/hostile.sh - what the hostile-member tests share (source it,
# then call hostile_setup): two real users, the victim V (uv, VU:VG) and
# the hostile member H (uh, HU:HG), removed at exit; a directory D like
# /dev/shm (sticky, open to all) with the binaries where both can read
# them (bin; lib: what victims preload); hostile_ns NAME makes a shared
# namespace NAME in D, world-writable (mode 0666), as a namespace every
# local user may join.  UIPC_TEST_LIB (and UIPC_TEST_PRELOAD before it)
# replace the library the victims preload (tests/unit-sanitize.t).
hostile_setup() {
	if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null || ! command -v setpriv >/dev/null; then
		echo "1..0 # SKIP needs root, useradd and setpriv (to be two real users)"; exit 0
	fi
	for f in "$top/build/libuipc.so" "$top/build/uipc" "$top/build/tests/unit/hostile"; do
		if [ ! -e "$f" ]; then
			echo "1..1"; echo "not ok 1 - $f missing: make all test-progs"; exit 1
		fi
	done
	uv=uhv$$ uh=uhh$$
	D=$(mktemp -d /dev/shm/uipc-hostile.XXXXXX)
	trap hostile_cleanup EXIT
	useradd -M -N -s /bin/sh "$uv" && useradd -M -N -s /bin/sh "$uh" &&
		groupadd "$uv" && groupadd "$uh" && usermod -g "$uv" "$uv" && usermod -g "$uh" "$uh" ||
		{ echo "1..1"; echo "not ok 1 - cannot create the test users"; exit 1; }
	VU=$(id -u "$uv") VG=$(id -g "$uv") HU=$(id -u "$uh") HG=$(id -g "$uh")
	chmod 1777 "$D"
	bin=$D/bin
	mkdir "$bin" "$bin/test" && cp "$top/build/libuipc.so" "$top/build/uipc" "$top/build/tests/unit/hostile" "$bin/" &&
		cp "${UIPC_TEST_LIB:-$top/build/libuipc.so}" "$bin/test/libuipc.so" &&
		ln -s libuipc.so "$bin/libuipc.so.0" && chmod 755 "$bin" "$bin/test" && chmod a+rx "$bin"/* "$bin"/test/*
	lib=${UIPC_TEST_PRELOAD:+$UIPC_TEST_PRELOAD:}$bin/test/libuipc.so
	unset UIPC_NS UIPC_NS_FILE UIPC_DIR XDG_RUNTIME_DIR
}

hostile_cleanup() {
	# a process a test left stopped (its pid in hpid); the users' files
	# are all in $D
	[ -n "$hpid" ] && kill -KILL "$hpid" 2>/dev/null
	userdel "$uv" 2>/dev/null; userdel "$uh" 2>/dev/null
	groupdel "$uv" 2>/dev/null; groupdel "$uh" 2>/dev/null
	rm -rf "$D"
}

# as USER, CMD...: setpriv executes CMD itself (runuser would stay the
# parent and stop itself when CMD stops, as su does)
as() {
	local u=$1; shift
	setpriv --reuid="$(id -u "$u")" --regid="$(id -g "$u")" --clear-groups -- "$@"
}

# a shared namespace NAME in $D, mode 0666 (128 MiB: the suite's rounds
# copy its live parts back each time)
hostile_ns() {
	"$bin/uipc" ns create --dir "$D" --shared --mode 0666 --size 128M "$1" >/dev/null
}
