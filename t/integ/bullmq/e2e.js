// t/integ/bullmq/e2e.js - BullMQ end to end against the server on
// LARDER_PORT. "full": jobs added (one by one, in bulk, delayed, one that
// fails then succeeds on retry, one that always fails), a Worker processes
// them, the completed and failed counts and the return values match.
// "scripts": every BullMQ Lua script, as BullMQ sends it, loaded with
// SCRIPT LOAD (its SHA must be BullMQ's own), and the queue's read calls
// on an empty queue. Prints "bullmq e2e: ok" when all held.
'use strict';
const { Queue, Worker, QueueEvents } = require('bullmq');
const IORedis = require('ioredis');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const port = Number(process.env.LARDER_PORT);
const mode = process.argv[2] || 'full';
const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };

function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}

function waitFor(fn, ms, what) {
  const end = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = async () => {
      try {
        if (await fn()) return resolve();
      } catch (e) { return reject(e); }
      if (Date.now() > end) return reject(new Error('timed out: ' + what));
      setTimeout(tick, 20);
    };
    tick();
  });
}

async function scripts() {
  const dir = path.join(path.dirname(require.resolve('bullmq')), 'scripts');
  const r = new IORedis(connection);
  let n = 0;
  for (const f of fs.readdirSync(dir)) {
    if (!f.endsWith('.js') || f === 'index.js') continue;
    const m = require(path.join(dir, f));
    for (const k of Object.keys(m)) {
      const s = m[k];
      if (!s || typeof s.content !== 'string') continue;
      const want = crypto.createHash('sha1').update(s.content).digest('hex');
      const got = await r.script('LOAD', s.content);
      check(got === want, `SCRIPT LOAD ${s.name}: ${got} != ${want}`);
      const [exists] = await r.script('EXISTS', want);
      check(exists === 1, `SCRIPT EXISTS ${s.name}`);
      n++;
    }
  }
  check(n > 50, `BullMQ scripts found: ${n}`);
  const q = new Queue('larder-ro', { connection });
  const counts = await q.getJobCounts('waiting', 'active', 'completed',
    'failed', 'delayed', 'paused', 'prioritized', 'waiting-children');
  for (const [k, v] of Object.entries(counts)) check(v === 0, `count ${k}`);
  check((await q.getJobs(['waiting', 'completed'])).length === 0, 'getJobs');
  check(await q.isPaused() === false, 'isPaused');
  check(await q.count() === 0, 'count');
  await q.close();
  await r.quit();
  console.log(`bullmq scripts: ${n} loaded`);
}

async function full() {
  const name = 'larder-e2e';
  const q = new Queue(name, { connection });
  await q.obliterate({ force: true });
  const N = 60;
  const seen = new Map();
  let flaky = 0;
  const worker = new Worker(name, async job => {
    if (job.name === 'flaky' && flaky++ === 0) throw new Error('first try');
    if (job.name === 'bad') throw new Error('always');
    seen.set(job.id, (seen.get(job.id) || 0) + 1);
    return job.data.x * 2;
  }, { connection, concurrency: 4 });
  await worker.waitUntilReady();
  for (let i = 0; i < N / 2; i++) await q.add('one', { x: i });
  await q.addBulk(Array.from({ length: N / 2 },
    (_, i) => ({ name: 'bulk', data: { x: N / 2 + i } })));
  await q.add('later', { x: 1000 }, { delay: 300 });
  await q.add('flaky', { x: 7 }, { attempts: 3, backoff: 10 });
  await q.add('bad', { x: 0 }, { attempts: 2 });
  await waitFor(async () => {
    const c = await q.getJobCounts('completed', 'failed');
    return c.completed === N + 2 && c.failed === 1;
  }, 60000, 'all jobs finished');
  const counts = await q.getJobCounts('waiting', 'active', 'completed',
    'failed', 'delayed');
  check(counts.waiting === 0 && counts.active === 0 && counts.delayed === 0,
    'nothing left: ' + JSON.stringify(counts));
  check(counts.completed === N + 2, 'completed ' + counts.completed);
  check(counts.failed === 1, 'failed ' + counts.failed);
  const done = await q.getJobs(['completed'], 0, -1);
  check(done.length === N + 2, 'completed jobs listed');
  for (const j of done)
    check(j.returnvalue === j.data.x * 2, `return value of ${j.id}`);
  for (const [id, n] of seen) check(n === 1, `job ${id} ran once`);
  const [bad] = await q.getJobs(['failed']);
  check(bad.name === 'bad' && bad.attemptsMade === 2 &&
        bad.failedReason === 'always', 'the failing job');
  await worker.close();
  await q.obliterate({ force: true });
  await q.close();
  console.log(`bullmq full: ${N + 3} jobs`);
}

(mode === 'full' ? full() : scripts()).then(() => {
  console.log('bullmq e2e: ok');
  process.exit(0);
}, e => {
  console.error(e && e.stack || e);
  process.exit(1);
});
