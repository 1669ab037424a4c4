#!/bin/bash
# tests/unit-layers.t - the library's objects keep to the layers: calls go
# down only, entry -> ipc (and aio) -> core -> libc (each folder's header
# says what it may call).  Read from the built objects with nm
# (tests/unit/layers.sh); first shown to catch a planted upward call.
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/tests/unit/layers.sh"
n=0 failed=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); failed=$((failed+1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "LAYER OBJECT" for every source of the library, as the Makefile builds it
objects() {
	for layer in core ipc aio entry; do
		for c in "$top/$layer"/*.c; do
			[ -e "$c" ] || continue
			echo "$layer $top/build/$layer/$(basename "${c%.c}").o"
		done
	done
}

# 1. the checker catches an upward call: a "core" object calling ipc/'s
# ksys_semget and libc's close (which entry/ interposes)
printf 'int ksys_semget(int, int, int); int close(int);\nint f(void) { return ksys_semget(0, 1, 0) + close(-1); }\n' > "$tmp/planted.c"
cc -c -o "$tmp/planted.o" "$tmp/planted.c"
out=$( (objects; echo "core $tmp/planted.o") | layers_check)
if echo "$out" | grep -q "planted.o (core) references ksys_semget, defined in .*/ipc/sem.o (ipc)" &&
   echo "$out" | grep -q "planted.o (core) references close, defined in .*/entry/watch.o (entry)"; then
	ok "a planted core object calling ipc/ and entry/ is caught"
else
	nok "a planted core object calling ipc/ and entry/ is caught" "checker said: ${out:-nothing}"
fi

# 2. every object is built, and each layer that has sources has objects
missing=$(objects | while read -r l o; do [ -f "$o" ] || echo "$o"; done)
if [ -z "$missing" ]; then
	ok "every object of the library is built ($(objects | wc -l) objects)"
else
	nok "every object of the library is built" "missing (run make): $missing"
fi
for layer in core ipc aio entry; do
	if objects | grep -q "^$layer "; then
		ok "layer $layer has objects"
	else
		nok "layer $layer has objects"
	fi
done

# 3. the library itself: no object references a symbol of a layer above it
out=$(objects | layers_check)
if [ -z "$out" ]; then
	ok "no object references a symbol of a layer it may not call"
else
	nok "no object references a symbol of a layer it may not call"
	echo "$out" | sed 's/^/# /'
	echo "$out" >&2
fi

echo "1..$n"
[ $failed -eq 0 ]
