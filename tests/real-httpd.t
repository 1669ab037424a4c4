#!/bin/bash
# tests/real-httpd.t - a real program: Apache httpd 2.4 (Debian's apache2)
# with the prefork MPM and `Mutex sysvsem default`: its accept mutex is a
# System V semaphore taken with SEM_UNDO (semop -1 / +1).  Two Listen ports,
# because with a single listener httpd on Linux does not serialize accept.
# Children run as www-data.  Run on the kernel (in a fresh IPC namespace,
# unshare --ipc) and under `uipc run` (a fresh namespace of this run), each:
#   - serve a static file on 127.0.0.1, ab -n 5000 -c 8: zero failed requests;
#   - find the child holding the accept mutex: while the server is idle one
#     child holds it and sleeps in epoll_wait on the listeners while the
#     others sleep in semop; the holder is the semaphore's sempid while its
#     value is 0, taken twice 0.3 s apart and unchanged, and checked against
#     the kernel's own view of the processes (/proc/PID/wchan: the holder in
#     the epoll wait, no other child in any poll);
#   - SIGKILL it: SEM_UNDO must give the mutex back, so another child must
#     become the holder, and a second ab run must have zero failed requests;
#   - SIGTERM the server: every child gone, the semaphore removed.
# The uipc side runs twice: the second time (nokipc) with `uipc run
# --no-kernel-ipc --trap` (a seccomp filter makes the kernel's System V IPC
# calls fail with ENOSYS, which proves httpd's mutex is all uipc's, and trap
# mode's filter and SIGSYS handler are in every process).
top=$(cd "$(dirname "$0")/.." && pwd)
uipc=$top/build/uipc
echo "1..20"
n=0 failed=0
ok() { echo "ok $((++n)) - $*"; }
nok() { failed=$((failed+1)); echo "not ok $((++n)) - $*"; }
if [ ! -x "$uipc" ] || ! command -v apache2 >/dev/null || ! command -v ab >/dev/null ||
   [ ! -f /usr/lib/apache2/modules/mod_mpm_prefork.so ] || ! id www-data >/dev/null 2>&1; then
	echo "not ok 1 - $uipc, apache2 (mpm_prefork, user www-data) or ab (apache2-utils) missing"
	exit 1
fi
base=$(mktemp -d /tmp/uipc-httpd.XXXXXX)
chmod 755 "$base"
server=
stop_server() {	# SIGTERM, then SIGKILL what is left: the parent and its children
	local pm=$1 i
	[ -n "$pm" ] || return 0
	kill -TERM "$pm" 2>/dev/null
	for i in $(seq 50); do kill -0 "$pm" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$pm" $(ps -o pid= --ppid "$pm") 2>/dev/null
	wait "$pm" 2>/dev/null
}
trap 'stop_server "$server"; rm -rf "$base"' EXIT
trap 'exit 130' INT TERM

# two free ports on 127.0.0.1 (nobody answers on them)
free_port() {
	local p=$1
	while (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; do p=$((p + 1)); done
	echo $p
}
p0=$((30000 + ($$ % 10000) * 2))
nsname=httpd-$$-$RANDOM

side() {
	local side=$1 d=$base/$1 kw pm semid p1 p2 out k x holder h2 new i kids others c
	p1=$(free_port "$p0"); p2=$(free_port $((p1 + 1)))
	p0=$((p2 + 1))
	mkdir -p "$d/htdocs" "$d/run" "$d/ns"
	head -c 8192 /dev/urandom | base64 >"$d/htdocs/index.html"
	cat >"$d/httpd.conf" <<-EOF
	ServerRoot "$d"
	DefaultRuntimeDir "$d/run"
	PidFile "$d/httpd.pid"
	ServerName 127.0.0.1
	LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so
	LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
	Listen 127.0.0.1:$p1
	Listen 127.0.0.1:$p2
	User www-data
	Group www-data
	Mutex sysvsem default
	StartServers 4
	MinSpareServers 4
	MaxSpareServers 8
	MaxRequestWorkers 16
	DocumentRoot "$d/htdocs"
	<Directory "$d/htdocs">
	  Require all granted
	</Directory>
	ErrorLog "$d/error.log"
	LogLevel info
	EOF
	# setsid: httpd signals its whole process group when it stops, which
	# must not include this script
	if [ $side = kernel ]; then
		setsid unshare --ipc -- apache2 -f "$d/httpd.conf" -DFOREGROUND >"$d/out.log" 2>&1 &
	else
		local opt=
		[ $side = nokipc ] && opt="--no-kernel-ipc --trap"
		setsid "$uipc" run $opt --dir "$d/ns" --ns "$nsname" -- \
			apache2 -f "$d/httpd.conf" -DFOREGROUND >"$d/out.log" 2>&1 &
	fi
	server=$!
	# this side's ipcs: the kernel's inside the server's IPC namespace, or uipc's
	if [ $side = kernel ]; then
		ipcs() { nsenter -t "$server" --ipc ipcs "$@"; }
	else
		ipcs() { "$uipc" ipcs --dir "$d/ns" --ns "$nsname" "$@"; }
	fi
	for i in $(seq 100); do
		[ "$(cat "$d/httpd.pid" 2>/dev/null)" = "$server" ] &&
		[ "$(ps -o pid= --ppid "$server" | wc -l)" -ge 4 ] && break
		sleep 0.1
	done
	pm=$(cat "$d/httpd.pid" 2>/dev/null)
	kids=$(ps -o pid= -o user= --ppid "$server" | awk '$2 == "www-data"' | wc -l)
	semid=$(ipcs -s | awk '$1 ~ /^0x/ { print $2; exit }')
	# under uipc the host kernel must hold no semaphore of www-data's (httpd
	# gives the mutex to its User with IPC_SET)
	kw=0
	[ $side != kernel ] && kw=$(awk 'NR > 1 && $5 == 33' /proc/sysvipc/sem | wc -l)
	if [ "$pm" = "$server" ] && [ "$kids" -ge 4 ] && [ -n "$semid" ] && [ "$kw" = 0 ]; then
		ok "$side: httpd up, $kids prefork children as www-data, accept mutex = semaphore $semid in $side's ipcs$([ $side != kernel ] && echo ", none in the kernel")"
	else
		nok "$side: httpd start: pid file '$pm' (expected $server), $kids children, semaphore '$semid', $kw www-data semaphores in the kernel"
		sed 's/^/# /' "$d/out.log" "$d/error.log" 2>/dev/null | tail -10
		stop_server "$server"; server=; return
	fi

	# ab: "Complete requests", "Failed requests", "Requests per second"
	ab_check() {
		local port=$1 what=$2 out c f rps
		out=$(timeout 60 ab -q -n 5000 -c 8 "http://127.0.0.1:$port/index.html" 2>&1)
		c=$(echo "$out" | awk '/^Complete requests:/ { print $3 }')
		f=$(echo "$out" | awk '/^Failed requests:/ { print $3 }')
		rps=$(echo "$out" | awk '/^Requests per second:/ { print $4 }')
		if [ "$c" = 5000 ] && [ "$f" = 0 ] && ! echo "$out" | grep -q "Non-2xx"; then
			ok "$side: $what: ab -n 5000 -c 8: 5000 complete, 0 failed, $rps requests/s"
			echo "$rps" >"$d/rps-$port"
		else
			nok "$side: $what: ab: complete '$c', failed '$f'"
			echo "$out" | tail -15 | sed 's/^/# /'
		fi
	}
	ab_check "$p1" "before the kill"

	# holder: the semaphore's (value, sempid) while idle, twice, unchanged
	holder_of() {
		ipcs -s -i "$semid" | awk 'f && NF >= 5 { print $2 ":" $5; exit } /^semnum/ { f = 1 }'
	}
	holder=
	for i in $(seq 20); do
		x=$(holder_of); sleep 0.3
		if [ "$x" = "$(holder_of)" ] && [ "${x%%:*}" = 0 ]; then
			h2=${x#*:}
			others=$(for c in $(ps -o pid= --ppid "$server"); do
				[ "$c" = "$h2" ] || grep -l poll "/proc/$c/wchan" 2>/dev/null; done)
			if [ "$(ps -o ppid= -p "$h2" | tr -d ' ')" = "$server" ] &&
			   grep -q poll "/proc/$h2/wchan" 2>/dev/null && [ -z "$others" ]; then
				holder=$h2; break
			fi
		fi
	done
	if [ -n "$holder" ]; then
		k=$(cat "/proc/$holder/wchan")
		kill -KILL "$holder"
		ok "$side: child $holder holds the accept mutex (semval 0, its sempid, in $k; no other child in a poll): SIGKILLed"
	else
		nok "$side: no stable holder of the accept mutex found (last: value:pid $x)"
		ipcs -s -i "$semid" | sed 's/^/# /'
	fi
	# SEM_UNDO gives the mutex back: another child takes it
	new=
	for i in $(seq 50); do
		x=$(holder_of)
		if [ "${x%%:*}" = 0 ] && [ "${x#*:}" != "$holder" ] && kill -0 "${x#*:}" 2>/dev/null &&
		   grep -q poll "/proc/${x#*:}/wchan" 2>/dev/null; then
			new=${x#*:}; break
		fi
		sleep 0.1
	done
	if [ -n "$holder" ] && [ -n "$new" ]; then
		ok "$side: the mutex came back (SEM_UNDO): child $new holds it now"
	else
		nok "$side: after the kill of $holder the mutex has no new holder (value:pid $x)"
	fi
	ab_check "$p2" "after the kill"

	stop_server "$server"; server=
	if grep -qiE "accept mutex|AH00144|AH00146|emerg|segfault|exit signal (Seg|Abort|Bus)" "$d/error.log"; then
		nok "$side: errors in the server's log"
		grep -iE "accept mutex|emerg|exit signal" "$d/error.log" | head -5 | sed 's/^/# /'
	else
		ok "$side: stopped; no accept-mutex error or crash in the server's log"
	fi
}

side kernel
side uipc
side nokipc
# after the stop the uipc namespaces must hold no semaphore any more
for s in uipc nokipc; do
	left=$("$uipc" ipcs --dir "$base/$s/ns" --ns "$nsname" -s |
		awk '$1 ~ /^0x/' | wc -l)
	if [ "$left" = 0 ]; then
		ok "$s: httpd removed its semaphore at stop"
	else
		nok "$s: $left semaphores left after the stop"
	fi
done
echo "# ab requests/s: kernel $(cat "$base"/kernel/rps-* 2>/dev/null | tr '\n' ' ')uipc $(cat "$base"/uipc/rps-* 2>/dev/null | tr '\n' ' ')no kernel IPC $(cat "$base"/nokipc/rps-* 2>/dev/null | tr '\n' ' ')"
[ $failed -eq 0 ]
