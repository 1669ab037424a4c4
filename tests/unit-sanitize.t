#!/bin/bash
# tests/unit-sanitize.t - the library built with AddressSanitizer and
# UndefinedBehaviorSanitizer (make sanitize: build-asan/libuipc.so, every
# undefined behaviour aborts) runs the differential suites, the
# hostile-member suite (issue 14) and the anonymous namespaces' truncation
# and teardown tests (issue 15): an out-of-bounds access, a use after
# free or an overflow that the normal build survives by luck is found
# here.  The ASan runtime is preloaded first; leaks are not checked (the
# programs under test are not built for it).  UIPC_SANITIZE_ROUNDS sets
# the random hostile rounds (default 2,000).
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$top/build-asan/libuipc.so
asan=$(${CC:-cc} -print-file-name=libasan.so 2>/dev/null)
if [ ! -f "$lib" ] || [ ! -f "$asan" ]; then
	echo "1..1"; echo "not ok 1 - $lib or the ASan runtime ($asan) missing: run make sanitize"; exit 1
fi
export UIPC_TEST_LIB=$lib UIPC_TEST_PRELOAD=$asan
# (SIGSEGV and SIGBUS stay uipc's and the programs': uipc turns faults in
# user copies into EFAULT and a truncated arena's into EIDRM)
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:handle_segv=0:handle_sigbus=0:allow_user_segv_handler=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# ASan's own mlock, munlock, mlockall and munlockall do nothing and never
# reach uipc's (they come first in the preload order): the cases that
# count what mlock does to attachments cannot run here
export UIPC_DIFF_SKIP="shm_vma mlock"
export UIPC_DIFF_SKIP_WHY="ASan intercepts mlock before uipc (tests/unit-sanitize.t)"
# slower under the sanitizers: a longer per-run timeout and budget
export UIPC_DIFF_TIMEOUT=30 UIPC_DIFF_BUDGET=600
export UIPC_HOSTILE_ROUNDS=${UIPC_SANITIZE_ROUNDS:-2000}

n=0 failed=0
for t in diff-sem diff-msg diff-shm diff-ns diff-ns-anon diff-ns-join diff-userns diff-doors \
	 diff-sem-random diff-msg-random diff-shm-random unit-hostile unit-hostile-random \
	 unit-ns-fault unit-ns-free; do
	[ -x "$top/tests/$t.t" ] || continue
	out=$("$top/tests/$t.t" 2>&1)
	rc=$?
	n=$((n+1))
	plan=$(echo "$out" | grep -c '^ok ')
	if [ $rc = 0 ] && ! echo "$out" | grep -q '^not ok'; then
		echo "ok $n - tests/$t.t with the sanitizer build ($plan passed)"
	else
		failed=$((failed+1))
		echo "not ok $n - tests/$t.t with the sanitizer build (status $rc)"
		# (on stderr too: prove shows it without -v, so that a run that
		# fails once leaves its seed and its failed cases in the log)
		if echo "$out" | grep -q '^not ok'; then
			echo "$out" | grep -E -A12 '^not ok|^# .*seed' | head -60 | sed 's/^/# /' | tee /dev/stderr
		else    # no failed case: what ended it (the plan, a message)
			echo "$out" | grep -v '^ok ' | tail -20 | sed 's/^/# /' | tee /dev/stderr
		fi
	fi
done
echo "1..$n"
[ $failed -eq 0 ]
