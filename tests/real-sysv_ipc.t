#!/bin/bash
# tests/real-sysv_ipc.t - a real program: the PyPI sysv_ipc package's own
# test suite (from its source distribution, which carries the tests), run on
# the kernel (a fresh IPC namespace) and under uipc (a fresh namespace);
# the results must be the same, and again with the uipc side under a seccomp
# filter that makes the kernel's System V IPC calls fail with ENOSYS
# (UIPC_NO_KERNEL_IPC=1): its IPC is all uipc's.  The package is built into a virtualenv
# under build/ (pip, from PyPI) the first time.
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$top/build/libuipc.so
work=$top/build/real/sysv_ipc
version=1.2.0
echo "1..4"
if [ ! -f "$lib" ]; then
	echo "not ok 1 - $lib missing: run make"; echo "not ok 2"; echo "not ok 3"; echo "not ok 4"; exit 1
fi
set -o pipefail
if [ ! -x "$work/venv/bin/python" ] || [ ! -d "$work/src/tests" ]; then
	rm -rf "$work" && mkdir -p "$work" &&
	python3 -m venv "$work/venv" >"$work/setup.log" 2>&1 &&
	"$work/venv/bin/pip" download -q --no-deps --no-binary :all: "sysv_ipc==$version" \
		-d "$work" >>"$work/setup.log" 2>&1 &&
	tar xzf "$work/sysv_ipc-$version.tar.gz" -C "$work" &&
	mv "$work/sysv_ipc-$version" "$work/src" &&
	"$work/venv/bin/pip" install -q "$work/src" >>"$work/setup.log" 2>&1
	if [ $? -ne 0 ]; then
		echo "not ok 1 - building sysv_ipc $version failed"; sed 's/^/# /' "$work/setup.log" | tail -20
		echo "not ok 2"; echo "not ok 3"; echo "not ok 4"; exit 1
	fi
fi
echo "ok 1 - sysv_ipc $version built from its source distribution"

# what a verbose unittest run says: each test's outcome ("name ... ok",
# "... skipped 'why'", "... FAIL"), sorted, then "Ran N tests" and the
# final status line; so each test must end the same way on both sides
summary() {
	local all
	all=$(cat)
	echo "$all" | grep -E ' \.\.\. ' | sort
	echo "$all" | grep -E '^(Ran [0-9]+ tests|OK|FAILED)' | sed 's/ in [0-9.]*s$//'
}
cd "$work/src" || exit 1
kern=$(timeout 300 unshare --ipc -- "$work/venv/bin/python" -m unittest discover -v 2>&1 | summary)
dir=$(mktemp -d /dev/shm/uipc-sysv_ipc.XXXXXX)
trap 'rm -rf "$dir"' EXIT
out=$(timeout 300 env UIPC_DIR=$dir UIPC_NS=sysv_ipc LD_PRELOAD=$lib \
	"$work/venv/bin/python" -m unittest discover -v 2>&1)
uipc=$(echo "$out" | summary)
last() { echo "$1" | grep -E '^(Ran|OK|FAILED)' | tr '\n' ' '; }
if [[ "$kern" == *OK* ]]; then
	echo "ok 2 - on the kernel: $(last "$kern")"
else
	echo "not ok 2 - on the kernel: $(last "$kern")"
fi
failed=0
if [ -n "$uipc" ] && [ "$uipc" = "$kern" ]; then
	echo "ok 3 - under uipc, every test ends the same: $(last "$uipc")"
else
	echo "not ok 3 - under uipc: $(last "$uipc") (kernel: $(last "$kern"))"
	diff <(echo "$kern") <(echo "$uipc") | head -20 | sed 's/^/# /'
	echo "$out" | grep -E '^(FAIL|ERROR)|Error' | head -20 | sed 's/^/# /'
	failed=1
fi
out=$(timeout 300 env UIPC_DIR=$dir UIPC_NS=sysv_ipc_nokipc LD_PRELOAD=$lib UIPC_NO_KERNEL_IPC=1 \
	"$work/venv/bin/python" -m unittest discover -v 2>&1)
nok=$(echo "$out" | summary)
if [ -n "$nok" ] && [ "$nok" = "$kern" ] && ! echo "$out" | grep -q "cannot install the seccomp filter"; then
	echo "ok 4 - under uipc with the kernel's IPC refused (UIPC_NO_KERNEL_IPC=1), every test ends the same: $(last "$nok")"
else
	echo "not ok 4 - under uipc with the kernel's IPC refused: $(last "$nok") (kernel: $(last "$kern"))"
	diff <(echo "$kern") <(echo "$nok") | head -20 | sed 's/^/# /'
	echo "$out" | grep -E '^(FAIL|ERROR)|Error|seccomp' | head -20 | sed 's/^/# /'
	failed=1
fi
[ $failed = 0 ]
