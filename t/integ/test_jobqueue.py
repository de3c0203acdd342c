"""Checks the job-queue pattern end to end: 8 consumers blocked in BRPOP spread over 2+ workers, 4 producers pushing 100,000 jobs, and the same with BLMOVE into per-consumer processing lists and LREM acknowledgements (20,000 jobs: each is two writes and a list created and dropped): every job consumed exactly once, none lost, none duplicated, queues empty at the end. LARDER_JOBQUEUE_JOBS sets both counts (the scheduled long run uses 100000 for both)."""

import multiprocessing
import os
import socket

from larder_test import (IS_REDIS, Client, Server, assert_eq, assert_true,
                         larder_only, main)

JOBS = int(os.environ.get('LARDER_JOBQUEUE_JOBS', '100000'))
MOVE_JOBS = int(os.environ.get('LARDER_JOBQUEUE_JOBS', '20000'))
CONSUMERS = 8
PRODUCERS = 4
BATCH = 100             # jobs a producer pushes per RPUSH
IDLE_S = '2'            # a consumer stops after this long with no job


def worker_of(c):
    for f in c.call('CLIENT', 'INFO').decode().split():
        if f.startswith('worker='):
            return int(f.split('=')[1])
    return None


def consume(port, queue, processing, out_path, ready):
    """BRPOP (or BLMOVE into `processing` then LREM) until idle; write the
    jobs taken to out_path, one per line."""
    c = Client(port, timeout=60)
    ready.put(worker_of(c))
    got = []
    try:
        while True:
            if processing:
                job = c.call('BLMOVE', queue, processing, 'RIGHT', 'LEFT',
                             IDLE_S)
                if job is None:
                    break
                assert c.call('LREM', processing, '1', job) == 1
            else:
                r = c.call('BRPOP', queue, IDLE_S)
                if r is None:
                    break
                job = r[1]
            got.append(job)
    finally:
        with open(out_path, 'wb') as f:
            f.write(b'\n'.join(got))
        c.close()


def produce(port, queue, tag, n):
    c = Client(port, timeout=60)
    for start in range(0, n, BATCH):
        jobs = ['%s:%d' % (tag, i) for i in range(start, min(n, start + BATCH))]
        c.call('LPUSH', queue, *jobs)
    c.close()


def run_queue(srv, processing, jobs):
    tmp = srv.dir
    ctx = multiprocessing.get_context('fork')
    ready = ctx.Queue()
    outs = [os.path.join(tmp, 'consumer%d' % i) for i in range(CONSUMERS)]
    queue = 'jobs'
    consumers = [ctx.Process(target=consume,
                             args=(srv.port, queue,
                                   'processing%d' % i if processing else None,
                                   outs[i], ready))
                 for i in range(CONSUMERS)]
    for p in consumers:
        p.start()
    workers = set(ready.get(timeout=30) for _ in consumers)
    if not IS_REDIS:
        assert_true(len(workers) >= 2, 'consumers on 2+ workers: %r'
                    % workers)
    per = jobs // PRODUCERS
    producers = [ctx.Process(target=produce,
                             args=(srv.port, queue, 'p%d' % i, per))
                 for i in range(PRODUCERS)]
    for p in producers:
        p.start()
    for p in producers + consumers:
        p.join(600)
        assert_eq(p.exitcode, 0, 'a client process')
    taken = []
    counts = []
    for path in outs:
        with open(path, 'rb') as f:
            data = f.read()
        mine = data.split(b'\n') if data else []
        counts.append(len(mine))
        taken += mine
    want = set(b'p%d:%d' % (i, j) for i in range(PRODUCERS)
               for j in range(per))
    assert_eq(len(taken), len(want), 'jobs consumed')
    assert_eq(len(set(taken)), len(taken), 'no job twice')
    assert_true(set(taken) == want, 'every job, and only those')
    assert_true(sum(1 for n in counts if n) >= CONSUMERS // 2,
                'the work spread over the consumers: %r' % counts)
    with srv.client() as c:
        assert_eq(c.call('LLEN', queue), 0)
        for i in range(CONSUMERS):
            assert_eq(c.call('LLEN', 'processing%d' % i), 0)
    print('# %d jobs, consumers on workers %s, per consumer %s'
          % (len(taken), sorted(w for w in workers if w is not None), counts))


def test_brpop_job_queue():
    with Server(workers=2 if not IS_REDIS else None,
                args=['--maxclients', '1000']) as srv:
        run_queue(srv, processing=False, jobs=JOBS)


def test_blmove_job_queue_with_processing_lists():
    with Server(workers=3 if not IS_REDIS else None) as srv:
        run_queue(srv, processing=True, jobs=MOVE_JOBS)


test_brpop_job_queue.timeout = 900
test_blmove_job_queue_with_processing_lists.timeout = 900

if __name__ == '__main__':
    main(globals())
