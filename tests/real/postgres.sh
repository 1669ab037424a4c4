#!/bin/bash
# tests/real/postgres.sh DIR IPCS - the PostgreSQL 15 scenario of
# tests/real-postgres.t, run as the postgres user, either inside a fresh
# kernel IPC namespace or under `uipc run` (the caller decides; this script is
# the same for both).  DIR is a directory of the postgres user's; IPCS is the
# command that lists this side's System V objects ("ipcs" on the kernel,
# "uipc ipcs" under uipc).  It prints "R name value" result lines that the
# .t turns into TAP; everything else goes to DIR/scenario.log.
#
# initdb with shared_memory_type = sysv and dynamic_shared_memory_type =
# sysv, start, pgbench -i, a bounded pgbench run with several clients, a
# parallel query, clean stop; then start again, commit a marker row, put
# pgbench load on, SIGKILL the postmaster and every backend, start again
# (PostgreSQL decides from its old segment's nattch, through IPC_STAT,
# whether it may start) and verify the data.
d=$1
ipcs_cmd=$2
bin=/usr/lib/postgresql/15/bin
data=$d/data
port=$3
exec 3>&1 >>"$d/scenario.log" 2>&1
say() { echo "R $*" >&3; }
step() { echo "=== $*"; }
export PGHOST=$d PGPORT=$port PGUSER=postgres PGDATABASE=postgres
psqlq() { "$bin/psql" -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }

pm_pid() { head -1 "$data/postmaster.pid" 2>/dev/null; }
# the postmaster's children, by parent pid
children() { ps -o pid= --ppid "$1" 2>/dev/null | tr -s ' \n' ' '; }

step initdb
if ! "$bin/initdb" -D "$data" -A trust -U postgres --no-sync >"$d/initdb.log" 2>&1; then
	say initdb fail; cat "$d/initdb.log"; exit 1
fi
say initdb ok
cat >>"$data/postgresql.conf" <<EOF
port = $port
listen_addresses = ''
unix_socket_directories = '$d'
shared_memory_type = sysv
dynamic_shared_memory_type = sysv
shared_buffers = 16MB
max_connections = 20
fsync = off
max_worker_processes = 8
max_parallel_workers = 4
max_parallel_workers_per_gather = 2
autovacuum = off
EOF

step start
if ! "$bin/pg_ctl" -D "$data" -l "$d/server.log" -w -t 60 start; then
	say start fail; tail -20 "$d/server.log"; exit 1
fi
say start ok
say shm_type "$(psqlq -c 'show shared_memory_type')/$(psqlq -c 'show dynamic_shared_memory_type')"
# the main segment, as this side lists it: its size and nattch
step ipcs; $ipcs_cmd -m
say segments "$($ipcs_cmd -m | awk '$1 ~ /^0x/ && $5 > 16000000 { n++ } END { print n+0 }')"
# and what the kernel holds: segments with the key PostgreSQL recorded in
# postmaster.pid (its 7th line: key and id) in this process's IPC namespace
# (read without libuipc, which would show its own namespace's there)
key=$(sed -n 7p "$data/postmaster.pid" | awk '{ print $1 }')
say kernel_segments "$(env -u LD_PRELOAD awk -v k="$key" 'NR > 1 && $1 == k { n++ } END { print n+0 }' /proc/sysvipc/shm)"

step pgbench -i
if ! "$bin/pgbench" -i -q -s 4 >"$d/pgbench-i.log" 2>&1; then
	say pgbench_init fail; cat "$d/pgbench-i.log"; exit 1
fi
say pgbench_init ok

step pgbench run
"$bin/pgbench" -c 4 -j 2 -T "${PG_BENCH_SECS:-8}" >"$d/pgbench.log" 2>&1
say pgbench_rc $?
cat "$d/pgbench.log"
say pgbench_xacts "$(awk -F': ' '/number of transactions actually processed/ { print $2 }' "$d/pgbench.log" | awk '{print $1}')"
say pgbench_failed "$(awk '/number of failed transactions/ { print $5 }' "$d/pgbench.log")"
say pgbench_tps "$(awk '/^tps = / { print $3; exit }' "$d/pgbench.log")"

step parallel query
out=$(psqlq <<'EOF'
set parallel_setup_cost = 0;
set parallel_tuple_cost = 0;
set min_parallel_table_scan_size = 0;
set max_parallel_workers_per_gather = 2;
explain (analyze, costs off, timing off) select count(*), sum(abalance) from pgbench_accounts;
EOF
)
echo "$out"
say parallel_workers "$(echo "$out" | awk '/Workers Launched:/ { print $3 }')"
say parallel_count "$(psqlq -c 'set max_parallel_workers_per_gather = 0; select count(*) from pgbench_accounts')"

step clean stop
if "$bin/pg_ctl" -D "$data" -w -t 60 -m fast stop; then
	say stop ok
else
	say stop fail
fi
$ipcs_cmd -m
say left_after_stop "$($ipcs_cmd -m | awk '$1 ~ /^0x/ { n++ } END { print n+0 }')"

step start for the crash
if ! "$bin/pg_ctl" -D "$data" -l "$d/server.log" -w -t 60 start; then
	say restart fail; tail -20 "$d/server.log"; exit 1
fi
psqlq -c "create table marker(v text); insert into marker values ('before the crash')"
before=$(psqlq -c 'select count(*) from pgbench_history')
"$bin/pgbench" -c 4 -j 2 -T 60 -n >"$d/pgbench-crash.log" 2>&1 &
load=$!
sleep 3
# Stop the postmaster first so it cannot fork while we look, then SIGKILL it
# and every child it has (backends, parallel workers, checkpointer, ...).
pm=$(pm_pid)
kill -STOP "$pm"
# the signal is asynchronous: list the children once the postmaster is
# really stopped (state T), so that it cannot have forked one after the list
for i in $(seq 100); do
	[ "$(awk '{ print $3 }' "/proc/$pm/stat" 2>/dev/null)" = T ] && break
	sleep 0.02
done
kids=$(echo $(children "$pm"))
# one child is kept, stopped, still attached: while it lives PostgreSQL must
# refuse to start (nattch > 0); the others die with the postmaster
survivor=${kids%% *}
kill -STOP "$survivor"
victims="$pm $kids"
echo "killing: $victims (all but $survivor now)"
dead="$pm ${kids#* }"
kill -KILL $dead
say killed "$(echo $victims | wc -w)"
wait $load
gone() {	# until the processes $* are gone (reaped), at most 5 s
	local i p alive
	for i in $(seq 50); do
		alive=0
		for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && return 0
		sleep 0.1
	done
	return 1
}
gone $dead
old_id=$(sed -n 7p "$data/postmaster.pid" | awk '{ print $2 }')
if "$bin/pg_ctl" -D "$data" -l "$d/server.log" -w -t 30 start; then
	say refused no
else
	say refused "$(grep -q 'pre-existing shared memory block.*still in use' "$d/server.log" && echo yes || echo other)"
fi
tail -3 "$d/server.log"
kill -KILL "$survivor"
gone $victims
# Nobody looks at the segments now: PostgreSQL itself must find, through
# IPC_STAT, that its old segment (key and id were in postmaster.pid) has no
# attachment left; only then does it remove it and start with a new one.
step start after the crash
if "$bin/pg_ctl" -D "$data" -l "$d/server.log" -w -t 60 start; then
	say crash_start ok
else
	say crash_start fail; tail -20 "$d/server.log"; exit 1
fi
new_id=$(sed -n 7p "$data/postmaster.pid" | awk '{ print $2 }')
$ipcs_cmd -m
echo "old segment $old_id, new $new_id"
say old_segment_gone "$($ipcs_cmd -m | awk -v id="$old_id" -v new="$new_id" '
	$2 == id { found = 1 } END { print (found || id == "" || id == new) ? "no" : "yes" }')"
grep -E "not properly shut down|redo|still in use" "$d/server.log" | tail -3
say recovered "$(grep -c 'database system was interrupted\|not properly shut down' "$d/server.log")"
say marker "$(psqlq -c 'select v from marker' | tr ' ' _)"
after=$(psqlq -c 'select count(*) from pgbench_history')
say history_grew "$([ "$after" -ge "$before" ] && echo yes || echo "no:$before>$after")"
# pgbench's invariant: every transaction adds the same delta to one account,
# teller and branch and logs it in history, atomically
sums=$(psqlq -c "select (select sum(abalance) from pgbench_accounts) || ' ' ||
	(select sum(tbalance) from pgbench_tellers) || ' ' ||
	(select sum(bbalance) from pgbench_branches) || ' ' ||
	(select coalesce(sum(delta), 0) from pgbench_history)")
echo "sums: $sums"
say sums_equal "$(echo $sums | awk '{ print ($1 == $2 && $2 == $3 && $3 == $4) ? "yes" : "no" }')"
say accounts "$(psqlq -c 'select count(*) from pgbench_accounts')"

step final stop
if "$bin/pg_ctl" -D "$data" -w -t 60 -m fast stop; then
	say final_stop ok
else
	say final_stop fail
fi
say left_at_end "$($ipcs_cmd -m | awk '$1 ~ /^0x/ { n++ } END { print n+0 }')"
say done ok
