<?php
// tests/real/php-sysv.php KEY - PHP's sysvsem, sysvshm and sysvmsg between
// several processes (pcntl_fork), for tests/real-php.t.  Prints one line per
// check, "ok NAME VALUE" or "FAIL NAME VALUE (expected ...)", with no pid or
// time in it, so that the kernel's and uipc's transcripts can be compared
// line by line; then "checks N failed M".  KEY: the first of the few System V
// keys the script uses (unique to the run).
$base = (int)($argv[1] ?? 0x5a000000);
$workers = 4;
$rounds = 300;
$failed = 0;
$checks = 0;

function check($name, $got, $want) {
	global $failed, $checks;
	$checks++;
	$g = json_encode($got);
	if ($got === $want) {
		echo "ok $name $g\n";
	} else {
		$failed++;
		echo "FAIL $name $g (expected " . json_encode($want) . ")\n";
	}
}

function wait_all($pids) {	// the exit statuses of $pids, in order
	$st = [];
	foreach ($pids as $p) {
		pcntl_waitpid($p, $s);
		$st[] = pcntl_wifexited($s) ? pcntl_wexitstatus($s) : -1;
	}
	return $st;
}

foreach (['sysvsem', 'sysvshm', 'sysvmsg', 'pcntl'] as $ext)
	check("extension-$ext", extension_loaded($ext), true);

$mutex = sem_get($base, 1, 0600, true);
$shm = shm_attach($base + 1, 65536, 0600);
$q = msg_get_queue($base + 2, 0600);
check('sem_get', $mutex instanceof SysvSemaphore, true);
check('shm_attach', $shm instanceof SysvSharedMemory, true);
check('msg_get_queue', $q instanceof SysvMessageQueue, true);
check('msg_queue_exists', msg_queue_exists($base + 2), true);

// 1. a counter in shared memory, incremented under the semaphore by every
//    worker; each also sends a message per round, of type worker+1
shm_put_var($shm, 1, 0);
$pids = [];
for ($w = 0; $w < $workers; $w++) {
	$pid = pcntl_fork();
	if ($pid === 0) {
		for ($i = 0; $i < $rounds; $i++) {
			if (!sem_acquire($mutex)) exit(2);
			$v = shm_get_var($shm, 1);
			shm_put_var($shm, 1, $v + 1);
			if (!sem_release($mutex)) exit(3);
			if (!msg_send($q, $w + 1, [$w, $i], true, true, $err)) exit(4);
		}
		exit(0);
	}
	$pids[] = $pid;
}
// receive everything while the workers run: per worker, rounds in order
$next = array_fill(0, $workers, 0);
$order_ok = true;
for ($k = 0; $k < $workers * $rounds; $k++) {
	if (!msg_receive($q, 0, $type, 1024, $m, true, 0, $err)) { $order_ok = false; break; }
	[$w, $i] = $m;
	if ($type !== $w + 1 || $i !== $next[$w]) $order_ok = false;
	$next[$w] = $i + 1;
}
check('workers-exit', wait_all($pids), array_fill(0, $workers, 0));
check('counter', shm_get_var($shm, 1), $workers * $rounds);
check('messages-in-order', $order_ok, true);
check('messages-all', $next, array_fill(0, $workers, $rounds));
$st = msg_stat_queue($q);
check('queue-empty', $st['msg_qnum'], 0);

// 2. blocking across processes: a child blocks on the held semaphore and
//    on a message type nobody sent yet; the parent releases and sends
sem_acquire($mutex);
shm_put_var($shm, 2, 'held');
$pid = pcntl_fork();
if ($pid === 0) {
	$nb = sem_acquire($mutex, true);	// non-blocking: must fail now
	sem_acquire($mutex);			// blocks until the parent releases
	$seen = shm_get_var($shm, 2);
	sem_release($mutex);
	msg_receive($q, 99, $type, 1024, $m, true, 0, $err);	// blocks
	msg_send($q, 100, [$nb, $seen, $type, $m]);
	exit(0);
}
usleep(300000);
shm_put_var($shm, 2, 'released');
sem_release($mutex);
usleep(100000);
msg_send($q, 5, 'not for the child');
msg_send($q, 99, 'for the child');
msg_receive($q, 100, $type, 1024, $reply);
check('child-blocking', $reply, [false, 'released', 99, 'for the child']);
check('child-exit', wait_all([$pid]), [0]);
msg_receive($q, 0, $type, 1024, $m);
check('other-message-left', [$type, $m], [5, 'not for the child']);

// 3. error paths, as the kernel reports them
check('receive-nowait-empty', msg_receive($q, 0, $type, 1024, $m, true, MSG_IPC_NOWAIT, $err), false);
check('receive-nowait-errno', $err, MSG_ENOMSG);
msg_send($q, 7, str_repeat('x', 200), false);
check('receive-too-small', msg_receive($q, 0, $type, 16, $m, false, 0, $err), false);
check('receive-too-small-errno', $err, 7);	// E2BIG
check('receive-noerror', msg_receive($q, 0, $type, 16, $m, false, MSG_NOERROR, $err) ? strlen($m) : $err, 16);
$st = msg_stat_queue($q);
check('stat-fields', [$st['msg_qnum'], $st['msg_perm.mode'], $st['msg_qbytes'] > 0], [0, 0600, true]);
check('set-qbytes', msg_set_queue($q, ['msg_qbytes' => 1000]), true);
check('qbytes', msg_stat_queue($q)['msg_qbytes'], 1000);
check('send-too-big-nowait', @msg_send($q, 1, str_repeat('y', 1001), false, false, $err), false);
check('send-too-big-errno', $err, 11);	// EAGAIN: the message exceeds msg_qbytes

// 4. shared memory variables: visible across fork, removal
$pid = pcntl_fork();
if ($pid === 0) {
	shm_put_var($shm, 3, ['from' => 'child', 'n' => 42]);
	shm_remove_var($shm, 1);
	exit(0);
}
wait_all([$pid]);
check('shm-var-from-child', shm_get_var($shm, 3), ['from' => 'child', 'n' => 42]);
check('shm-var-removed', shm_has_var($shm, 1), false);
check('shm-full', @shm_put_var($shm, 4, str_repeat('z', 70000)), false);

// 5. a counting semaphore (max_acquire 2) between processes
$sem2 = sem_get($base + 3, 2, 0600, false);
$pid = pcntl_fork();
if ($pid === 0) {
	sem_acquire($sem2);
	sem_acquire($sem2);
	msg_send($q, 200, 'took two');
	usleep(300000);
	sem_release($sem2);
	exit(0);
}
msg_receive($q, 200, $type, 64, $m);
check('count-two-taken', [$m, sem_acquire($sem2, true)], ['took two', false]);
check('count-one-back', sem_acquire($sem2), true);
sem_release($sem2);
check('count-child-exit', wait_all([$pid]), [0]);

// 6. removal
check('sem_remove', sem_remove($mutex) && sem_remove($sem2), true);
check('shm_remove', shm_remove($shm), true);
check('msg_remove_queue', msg_remove_queue($q), true);
check('queue-gone', msg_queue_exists($base + 2), false);

echo "checks $checks failed $failed\n";
exit($failed ? 1 : 0);
