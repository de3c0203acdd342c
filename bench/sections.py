"""sections: the sections of bench/run that need more than one larder-bench
command line per case.

- cache: GET throughput and larder's cache hit ratio (INFO cache deltas)
  for working sets from 1% to 400% of a small cache-mb, uniform and
  Zipf(0.99); redis beside it with the same keys.
- coldstart: load N keys, stop cleanly (then, second figure, kill -9 the
  whole process tree) and time exec -> first reply and exec -> first GET
  of a loaded key; redis restarts from an RDB saved after the load.
- insert: distinct keys (larder-bench --dist shuffled, --seq-start per
  chunk) in chunks, SET/s and latency per chunk and the size on disk after
  each; bounded by a time limit per server, reporting how far it got.
- cardinality: hash, set, list and zset of 1k to 1M elements: latency of
  single-element operations at concurrency 1, and of a full read.

Each section is run(st, emit): st is a suite.Suite, emit(case) records a
case as soon as it is measured.  RENDER maps a section to its Markdown.
"""

import os
import shutil
import time

import benchlib
import suite

MIB = 1024 * 1024
MS_PER_S = 1000.0
PERCENT = 100.0
# Time bound of a set-up run (loading data) of larder-bench.
LOAD_TIMEOUT_S = 900
LOAD_PIPELINE = 16
LOAD_CONNECTIONS = 2

# --- cache ---------------------------------------------------------------

CACHE = {"full": {"cache_mb": 16, "points": (1, 10, 50, 100, 200, 400)},
         "quick": {"cache_mb": 1, "points": (10, 100, 400)}}
CACHE_DISTS = ("uniform", "zipf:0.99")
CACHE_CONNECTIONS = 8
CACHE_PIPELINE = 16
CACHE_CALIBRATION_KEYS = 2000
# Cache bytes of one key of the sweep (16-byte key, 64-byte value) as
# larder 0.1.0 reports them; used only when larder is not measured.
CACHE_ENTRY_BYTES_ASSUMED = 176
CACHE_MIN_KEYS = 16


def load_and_read(st, srv, keys):
    """Preload keys and read each once in order: afterwards the cache
    holds what fits of them, as after a warm-up."""
    st.bench_run(srv, ["--workload", "get", "--preload", "--keyspace", keys,
                       "--preload-connections", LOAD_CONNECTIONS,
                       "--dist", "sequential", "--connections", 1,
                       "--pipeline", LOAD_PIPELINE, "--requests", keys,
                       "--warmup", 0, "--threads", 1,
                       "--timeout", LOAD_TIMEOUT_S], LOAD_TIMEOUT_S)


def cache_calibrate(st, cache_mb):
    """(bytes one key takes in larder's cache, keys the cache holds, how
    that was found), from INFO cache after reading a few keys."""
    budget = cache_mb * MIB
    if not st.larder:
        return (CACHE_ENTRY_BYTES_ASSUMED, budget // CACHE_ENTRY_BYTES_ASSUMED,
                "assumed (larder not measured)")
    servers, errors = st.start(larder_args=["--cache-mb", cache_mb],
                               targets=("larder",))
    try:
        for srv in servers:
            load_and_read(st, srv, CACHE_CALIBRATION_KEYS)
            stats = benchlib.info(srv.port, "cache")
            if stats.get("cache_entries"):
                per = stats["cache_used_bytes"] / float(stats["cache_entries"])
                budget = stats.get("cache_budget_bytes") or budget
                return per, int(budget / per), (
                    "measured: %d entries use %d bytes"
                    % (stats["cache_entries"], stats["cache_used_bytes"]))
    except (RuntimeError, OSError, benchlib.RespError) as e:
        errors["larder"] = str(e)
    finally:
        suite.stop_all(servers)
    return (CACHE_ENTRY_BYTES_ASSUMED, budget // CACHE_ENTRY_BYTES_ASSUMED,
            "assumed (calibration failed: %s)"
            % "; ".join(errors.values() or ["no cache entries"]))


def cache_before(srv):
    return benchlib.info(srv.port, "cache") if srv.name == "larder" else None


def cache_after(srv, before, run):
    """Hit ratio of the run from larder's INFO cache counters."""
    if before is None:
        return
    now = benchlib.info(srv.port, "cache")
    if "cache_hits" not in now or "cache_hits" not in before:
        return  # a larder without the counters: no ratio, not a failure
    hits = now["cache_hits"] - before["cache_hits"]
    misses = now["cache_misses"] - before["cache_misses"]
    run["cache_hits"] = hits
    run["cache_misses"] = misses
    run["hit_ratio"] = hits / float(hits + misses) if hits + misses else None


def run_cache(st, emit):
    cfg = CACHE[st.mode]
    cache_mb = cfg["cache_mb"]
    entry_bytes, capacity, how = cache_calibrate(st, cache_mb)
    common = ["--duration", st.p["duration"], "--warmup", st.p["warmup"],
              "--threads", st.threads]
    for pct in cfg["points"]:
        keys = max(CACHE_MIN_KEYS, int(round(pct / PERCENT * capacity)))
        started, errors = st.start(larder_args=["--cache-mb", cache_mb])
        try:
            servers = st.prepare(started, errors,
                                 lambda srv: load_and_read(st, srv, keys))
            for dist in CACHE_DISTS:
                args = ["--workload", "get", "--keyspace", keys, "--dist",
                        dist, "--connections", CACHE_CONNECTIONS,
                        "--pipeline", CACHE_PIPELINE]
                measured = suite.measure(st, servers, args, common,
                                         preload_first=False,
                                         before=cache_before,
                                         after=cache_after)
                emit(suite.case("cache", "%g%%-%s" % (pct, dist),
                                args + common, measured, errors,
                                working_set_pct=pct, keys=keys, dist=dist,
                                cache_mb=cache_mb,
                                cache_entry_bytes=round(entry_bytes, 1),
                                cache_capacity_keys=capacity,
                                calibration=how))
        finally:
            suite.stop_all(started)


def fmt_hit(res):
    if not res or res.get("hit_ratio") is None:
        return "-"
    return "%.1f (%.1f-%.1f)" % (res["hit_ratio"] * PERCENT,
                                 res["hit_ratio_min"] * PERCENT,
                                 res["hit_ratio_max"] * PERCENT)


def render_cache(doc, cases):
    first = cases[0]
    lines = ["larder runs with `--cache-mb %d`; a key of the sweep (16-byte "
             "key, 64-byte value) takes %.0f bytes of cache (%s), so the "
             "cache holds about %d keys: the working set is that many keys "
             "times the percentage.  GET at %d connections, pipeline %d, "
             "after every key was loaded and read once; hit %% is "
             "cache_hits / (cache_hits + cache_misses) over each run "
             "(INFO cache deltas, warm-up included).  redis-server holds "
             "the same keys in memory."
             % (first["cache_mb"], first["cache_entry_bytes"],
                first["calibration"], first["cache_capacity_keys"],
                CACHE_CONNECTIONS, CACHE_PIPELINE), "",
             "| working set | keys | dist | larder GET/s | redis GET/s | "
             "larder/redis | larder hit % | larder p50/p99 | "
             "redis p50/p99 |",
             "| --- | ---: | --- | --- | --- | --- | --- | --- | --- |"]
    for c in cases:
        lines.append("| %g%% | %d | %s | %s | %s | %s | %s | %s | %s |"
                     % (c["working_set_pct"], c["keys"], c["dist"],
                        suite.fmt_ops(c.get("larder")),
                        suite.fmt_ops(c.get("redis")), suite.fmt_ratio(c),
                        fmt_hit(c.get("larder")),
                        suite.fmt_lat(c.get("larder")),
                        suite.fmt_lat(c.get("redis"))))
    return lines + [""]


# --- coldstart -----------------------------------------------------------

COLD_KEYS = {"full": 1000000, "quick": 20000}
COLD_POLL_S = 0.0005
COLD_TIMEOUT_S = 120.0
# After the first reply, how long a loaded key may still read as missing
# before the restart counts as having lost it.
COLD_NIL_GRACE_S = 2.0
COLD_KINDS = (("clean-restart", "SIGTERM, wait for exit, start again"),
              ("kill9-restart", "SIGKILL to every process of the server, "
                                "start again"))
COLD_FIGURES = ("first_reply_ms", "first_get_ms", "stop_ms")


def cold_load(st, srv, n):
    """Load n keys; redis then SAVEs, so it restarts from an RDB."""
    t0 = time.monotonic()
    st.bench_run(srv, ["--workload", "get", "--preload", "--keyspace", n,
                       "--preload-connections", LOAD_CONNECTIONS,
                       "--requests", 1, "--warmup", 0, "--connections", 1,
                       "--threads", 1, "--timeout", LOAD_TIMEOUT_S],
                 LOAD_TIMEOUT_S)
    srv.load_s = time.monotonic() - t0
    with benchlib.Client(srv.port, timeout=LOAD_TIMEOUT_S) as c:
        if srv.name == "redis":
            t0 = time.monotonic()
            c.command("SAVE")
            srv.save_s = time.monotonic() - t0
        keys = c.command("DBSIZE")
    if keys != n:
        raise RuntimeError("DBSIZE %s after loading %d keys" % (keys, n))


def data_bytes(srv):
    """Bytes on disk of the server's data: larder's data.mdb, redis's
    dump.rdb (None when absent)."""
    path = (os.path.join(srv.workdir, "data", "data.mdb")
            if srv.name == "larder" else os.path.join(srv.workdir,
                                                      "dump.rdb"))
    try:
        st = os.stat(path)
    except OSError:
        return None
    return {"file_bytes": st.st_size, "allocated_bytes": st.st_blocks * 512}


def restart_timed(srv, key):
    """Start srv and poll it: ms from exec to the first PING answered and
    to the first GET of key that returns its value."""
    t0 = time.monotonic()
    srv.spawn()
    deadline = t0 + COLD_TIMEOUT_S
    first_reply = None
    last = "no connection"
    while time.monotonic() < deadline:
        if srv.exited() is not None:
            raise RuntimeError("%s exited at start (status %s); log: %s"
                               % (srv.name, srv.exited(), srv.log_tail()))
        try:
            client = benchlib.Client(srv.port, timeout=COLD_TIMEOUT_S)
        except OSError:
            time.sleep(COLD_POLL_S)
            continue
        with client:
            while time.monotonic() < deadline:
                try:
                    if first_reply is None:
                        client.command("PING")
                        first_reply = time.monotonic() - t0
                    value = client.command("GET", key)
                except benchlib.RespError as e:
                    last = str(e)  # e.g. LOADING: poll again
                    time.sleep(COLD_POLL_S)
                    continue
                except OSError as e:
                    last = str(e)
                    break
                now = time.monotonic()
                if value is not None:
                    return {"first_reply_ms": first_reply * MS_PER_S,
                            "first_get_ms": (now - t0) * MS_PER_S}
                last = "GET %s: nil" % key
                if now - t0 - first_reply > COLD_NIL_GRACE_S:
                    raise RuntimeError("a loaded key is missing after the "
                                       "restart (%s)" % last)
                time.sleep(COLD_POLL_S)
    raise RuntimeError("not ready %.0fs after exec (%s)"
                       % (COLD_TIMEOUT_S, last))


def cold_restart(srv, kind, key, n):
    """Stop srv the given way, restart it and time it; checks that every
    key survived."""
    run = {}
    if kind == "clean-restart":
        took = srv.halt()
        run["stop_ms"] = None if took is None else took * MS_PER_S
    else:
        srv.kill9()
    run.update(restart_timed(srv, key))
    with benchlib.Client(srv.port) as c:
        run["keys_after"] = c.command("DBSIZE")
    if run["keys_after"] != n:
        raise RuntimeError("%s of %d keys after %s" % (run["keys_after"], n,
                                                       kind))
    return run


def run_coldstart(st, emit):
    n = COLD_KEYS[st.mode]
    key = "key:%012d" % (n // 2)
    started, errors = st.start(keep=True)
    try:
        servers = st.prepare(started, errors, lambda s: cold_load(st, s, n))
        for kind, how in COLD_KINDS:
            runs = {srv.name: [] for srv in servers}
            failed = dict(errors)
            for rep in range(st.reps):
                for srv in suite.order(servers, rep):
                    if srv.name in failed:
                        continue
                    try:
                        runs[srv.name].append(cold_restart(srv, kind, key, n))
                    except (RuntimeError, OSError, benchlib.RespError) as e:
                        failed[srv.name] = str(e)
            c = {"section": "coldstart", "case": kind, "how": how,
                 "keys": n, "probe_key": key, "args": []}
            for srv in servers:
                res = suite.summarise_figures(runs[srv.name], COLD_FIGURES)
                res["load_s"] = getattr(srv, "load_s", None)
                res["save_s"] = getattr(srv, "save_s", None)
                res["data"] = data_bytes(srv)
                if srv.name in failed:
                    res["error"] = failed[srv.name]
                c[srv.name] = res
            for target, err in errors.items():
                c[target] = {"error": err}
            emit(c)
    finally:
        for srv in started:
            srv.stop()
            shutil.rmtree(srv.workdir, ignore_errors=True)


def fmt_ms(res, key):
    if not res or res.get(key) is None:
        return "-"
    return "%.1f (%.1f-%.1f)" % (res[key], res[key + "_min"],
                                 res[key + "_max"])


def fmt_mib(n):
    return "-" if n is None else "%.1f" % (n / float(MIB))


def render_coldstart(doc, cases):
    n = cases[0]["keys"]
    lines = ["%d keys (64-byte values) loaded with larder-bench --preload; "
             "redis then SAVEs and restarts from that RDB (`--save '' "
             "--appendonly no`).  Times in ms from exec to the first PING "
             "answered and to the first GET of a loaded key (`%s`) that "
             "returns its value; median (min-max) of %d restarts; every "
             "restart is checked to keep all %d keys (DBSIZE)."
             % (n, cases[0]["probe_key"], doc["reps"], n), "",
             "| restart | larder first reply | larder first GET | "
             "redis first reply | redis first GET | clean stop ms "
             "larder / redis |",
             "| --- | --- | --- | --- | --- | --- |"]
    for c in cases:
        cells = []
        for t in suite.TARGETS:
            res = c.get(t)
            if res and res.get("error"):
                cells += ["failed: %s" % suite.short(
                    res["error"], suite.CELL_ERROR_CHARS), ""]
            else:
                cells += [fmt_ms(res, "first_reply_ms"),
                          fmt_ms(res, "first_get_ms")]
        stops = " / ".join("%.0f" % c[t]["stop_ms"]
                           if (c.get(t) or {}).get("stop_ms") is not None
                           else "-" for t in suite.TARGETS)
        lines.append("| %s | %s | %s |" % (c["case"], " | ".join(cells),
                                           stops))
    lines.append("")
    res = {t: cases[0].get(t) or {} for t in suite.TARGETS}
    lar, red = res["larder"], res["redis"]
    lines.append("Loading took %s s for larder and %s s for redis (SAVE %s "
                 "s); on disk: larder data.mdb %s MiB, redis dump.rdb %s "
                 "MiB."
                 % ("%.1f" % lar["load_s"] if lar.get("load_s") else "-",
                    "%.1f" % red["load_s"] if red.get("load_s") else "-",
                    "%.2f" % red["save_s"] if red.get("save_s") else "-",
                    fmt_mib((lar.get("data") or {}).get("file_bytes")),
                    fmt_mib((red.get("data") or {}).get("file_bytes"))))
    return lines + [""]


# --- insert ----------------------------------------------------------------

INSERT = {"full": {"keys": 10000000, "chunk": 1000000, "limit_s": 240.0},
          "quick": {"keys": 200000, "chunk": 50000, "limit_s": 20.0}}
INSERT_PIPELINE = 32
TIMEOUT_MESSAGE = "did not complete within --timeout"


def insert_sizes(srv):
    """DBSIZE and the data's size after a chunk: larder's data.mdb (file
    and allocated bytes, LMDB's used bytes), redis's used_memory and the
    RDB a SAVE writes (SAVE's time too)."""
    out = {}
    with benchlib.Client(srv.port, timeout=LOAD_TIMEOUT_S) as c:
        out["db_keys"] = c.command("DBSIZE")
        if srv.name == "larder":
            out["lmdb_used_bytes"] = c.info("persistence").get(
                "lmdb_used_bytes")
        else:
            mem = c.info("memory")
            out["used_memory"] = mem.get("used_memory")
            out["used_memory_rss"] = mem.get("used_memory_rss")
            t0 = time.monotonic()
            c.command("SAVE")
            out["save_s"] = round(time.monotonic() - t0, 3)
    data = data_bytes(srv) or {}
    out["disk_bytes"] = data.get("file_bytes")
    out["disk_allocated_bytes"] = data.get("allocated_bytes")
    return out


def fmt_keys(n):
    if n % 1000000 == 0:
        return "%dM" % (n // 1000000)
    if n % 1000 == 0:
        return "%dk" % (n // 1000)
    return str(n)


def insert_chunk(st, srv, args, left, seed):
    """One chunk against srv: measure()'s per-server result, or None when
    the time limit ran out during the chunk."""
    res = {"runs": [], "error": None, "info": None, "settings": None}
    try:
        doc = st.bench_run(srv, args + ["--timeout", left, "--seed", seed],
                           left)
        run = suite.run_figures(doc)
        run.update(insert_sizes(srv))
        res["runs"].append(run)
        res["settings"] = doc.get("settings")
        res["error"] = suite.run_failure(srv, run)
    except (RuntimeError, OSError, benchlib.RespError) as e:
        if TIMEOUT_MESSAGE in str(e):
            return None
        res["error"] = str(e)
    return res


def run_insert(st, emit):
    cfg = INSERT[st.mode]
    total, chunk, limit = cfg["keys"], cfg["chunk"], cfg["limit_s"]
    servers, errors = st.start()
    spent = {srv.name: 0.0 for srv in servers}
    reached = {srv.name: 0 for srv in servers}
    stopped = set()
    try:
        for j in range(total // chunk):
            args = ["--workload", "set", "--dist", "shuffled", "--keyspace",
                    total, "--seq-start", j * chunk, "--requests", chunk,
                    "--connections", 1, "--pipeline", INSERT_PIPELINE,
                    "--warmup", 0, "--threads", 1]
            measured = {}
            for srv in suite.order(servers, j):
                if srv.name in stopped or srv.name in errors:
                    continue
                left = limit - spent[srv.name]
                t0 = time.monotonic()
                res = insert_chunk(st, srv, args, left, suite.SEED_BASE + j)
                spent[srv.name] += time.monotonic() - t0
                if res is None or spent[srv.name] >= limit:
                    stopped.add(srv.name)
                if res is None:
                    continue
                measured[srv.name] = res
                if res["error"]:
                    errors[srv.name] = res["error"]
                else:
                    reached[srv.name] = (j + 1) * chunk
            if not measured:
                break
            c = suite.case("insert", fmt_keys((j + 1) * chunk), args,
                           measured, keys_after=(j + 1) * chunk, chunk=chunk)
            for srv in servers:
                if srv.name not in measured:
                    c[srv.name] = {"skipped": "time limit"
                                   if srv.name in stopped else "failed"}
                    continue
                runs = c[srv.name].get("runs") or [{}]
                c[srv.name].update({k: runs[0][k] for k in INSERT_SIZE_FIELDS
                                    if k in runs[0]})
                c[srv.name]["elapsed_total_s"] = round(spent[srv.name], 1)
            emit(c)
    finally:
        suite.stop_all(servers)
    # A last pseudo-case records how far each server got.
    emit({"section": "insert", "case": "summary", "args": [],
          "keys_target": total, "limit_s": limit,
          "reached": {name: None if name in errors else reached[name]
                      for name in spent},
          "spent_s": {name: round(v, 1) for name, v in spent.items()}})


INSERT_SIZE_FIELDS = ("db_keys", "lmdb_used_bytes", "used_memory",
                      "used_memory_rss", "save_s", "disk_bytes",
                      "disk_allocated_bytes")


def render_insert(doc, cases):
    chunks = [c for c in cases if c["case"] != "summary"]
    summary = [c for c in cases if c["case"] == "summary"]
    chunk = chunks[0]["chunk"] if chunks else 0
    lines = ["Distinct keys (64-byte values) in chunks of %d, in a "
             "scrambled order over the whole key range "
             "(`larder-bench --workload set --dist shuffled --seq-start "
             "K`), one connection, pipeline %d; each chunk is one run, so "
             "there is no min-max.  Size after each chunk: larder's "
             "data.mdb (and LMDB's used bytes), redis's used_memory and "
             "the RDB a SAVE then writes." % (chunk, INSERT_PIPELINE), "",
             "| keys | larder SET/s | larder p50/p99 | larder data.mdb MiB "
             "(used) | redis SET/s | redis p50/p99 | redis used_memory MiB "
             "| redis RDB MiB | larder/redis |",
             "| --- | ---: | --- | --- | ---: | --- | --- | --- | --- |"]
    for c in chunks:
        lar, red = c.get("larder") or {}, c.get("redis") or {}

        def ops(res):
            if res.get("skipped"):
                return "(%s)" % res["skipped"]
            if res.get("error"):
                return "failed: %s" % suite.short(res["error"],
                                                  suite.CELL_ERROR_CHARS)
            return "-" if res.get("ops_per_sec") is None else \
                "%.0f" % res["ops_per_sec"]

        lines.append("| %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s |"
                     % (c["case"], ops(lar), suite.fmt_lat(lar),
                        fmt_mib(lar.get("disk_bytes")),
                        fmt_mib(lar.get("lmdb_used_bytes")), ops(red),
                        suite.fmt_lat(red), fmt_mib(red.get("used_memory")),
                        fmt_mib(red.get("disk_bytes")), suite.fmt_ratio(c)))
    lines.append("")
    for s in summary:
        for name, reached in sorted(s["reached"].items()):
            lines.append("- %s: %s of %d keys in %.0f s of its %.0f s limit"
                         % (name, "failed" if reached is None else
                            "%d" % reached, s["keys_target"],
                            s["spent_s"][name], s["limit_s"]))
        lines.append("")
    return lines


# --- cardinality ---------------------------------------------------------

CARD_SIZES = {"full": (1000, 10000, 100000, 1000000), "quick": (1000, 10000)}
CARD_VALUE_BYTES = 16
CARD_SINGLE_REQUESTS = {"full": 3000, "quick": 200}
CARD_SINGLE_WARMUP_S = {"full": 0.2, "quick": 0.05}
# A full read runs until it has read about this many elements (at least
# CARD_FULL_MIN and at most CARD_FULL_MAX calls).
CARD_FULL_ELEMENTS = {"full": 2000000, "quick": 100000}
CARD_FULL_MIN = 3
CARD_FULL_MAX = 200
# LPUSH grows its list: at most this share of the list per run.
CARD_LPUSH_GROWTH = 0.15
CARD_LPUSH_MIN = 100
CARD_TIMEOUT_S = 600
HASH, SET, LIST, ZSET = ("hash:000000000000", "set:000000000000",
                         "list:000000000000", "zset:000000000000")
# type, the larder-bench workload whose --preload builds it, its size cmd
CARD_TYPES = (("hash", "hget", "HLEN", HASH),
              ("set", "sismember", "SCARD", SET),
              ("list", "lrange", "LLEN", LIST),
              ("zset", "zrange", "ZCARD", ZSET))


def card_ops(n):
    """(type, op, kind, larder-bench arguments) in the order they run;
    LPUSH last of the list ops since it grows the list."""
    return (
        ("hash", "HGET", "single", ["--workload", "hget"]),
        ("hash", "HSET", "single", ["--workload", "hset"]),
        ("hash", "HGETALL", "full", ["--workload", "hgetall"]),
        ("set", "SISMEMBER", "single", ["--workload", "sismember"]),
        ("set", "SADD", "single", ["--workload", "sadd"]),
        ("set", "SMEMBERS", "full", ["--command", "SMEMBERS " + SET]),
        ("list", "LINDEX", "single",
         ["--command", "LINDEX %s %d" % (LIST, n // 2)]),
        ("list", "LRANGE", "full", ["--command", "LRANGE %s 0 -1" % LIST]),
        ("list", "LPUSH", "single", ["--workload", "lpush"]),
        ("zset", "ZSCORE", "single",
         ["--command", "ZSCORE %s __member__" % ZSET]),
        ("zset", "ZRANK", "single",
         ["--command", "ZRANK %s __member__" % ZSET]),
        ("zset", "ZADD", "single", ["--workload", "zadd"]),
        ("zset", "ZRANGE", "full", ["--command", "ZRANGE %s 0 -1" % ZSET]),
    )


def card_load(st, srv, n):
    """Build the four collections of n elements and check their sizes."""
    for _, workload, size_cmd, key in CARD_TYPES:
        st.bench_run(srv, ["--workload", workload, "--preload", "--keyspace",
                           1, "--members", n, "--value-size",
                           CARD_VALUE_BYTES, "--requests", 1, "--warmup", 0,
                           "--connections", 1, "--threads", 1, "--timeout",
                           LOAD_TIMEOUT_S], LOAD_TIMEOUT_S)
        with benchlib.Client(srv.port) as c:
            got = c.command(size_cmd, key)
        if got != n:
            raise RuntimeError("%s %s is %s after loading %d elements"
                               % (size_cmd, key, got, n))


def card_requests(st, kind, op, n):
    if kind == "full":
        return max(CARD_FULL_MIN,
                   min(CARD_FULL_MAX, CARD_FULL_ELEMENTS[st.mode] // n))
    req = CARD_SINGLE_REQUESTS[st.mode]
    if op == "LPUSH":
        req = min(req, max(CARD_LPUSH_MIN, int(n * CARD_LPUSH_GROWTH)))
    return req


def run_cardinality(st, emit):
    for n in CARD_SIZES[st.mode]:
        started, errors = st.start()
        try:
            servers = st.prepare(started, errors,
                                 lambda srv: card_load(st, srv, n))
            for ctype, op, kind, wl_args in card_ops(n):
                req = card_requests(st, kind, op, n)
                args = wl_args + ["--keyspace", 1, "--members", n,
                                  "--value-size", CARD_VALUE_BYTES,
                                  "--connections", 1, "--pipeline", 1]
                common = ["--requests", req, "--timeout", CARD_TIMEOUT_S,
                          "--warmup", (CARD_SINGLE_WARMUP_S[st.mode]
                                       if kind == "single" else 0),
                          "--threads", 1]
                measured = suite.measure(st, servers, args, common,
                                         preload_first=False,
                                         bound=CARD_TIMEOUT_S)
                emit(suite.case("cardinality", "%s@%s" % (op, fmt_keys(n)),
                                args + common, measured, errors,
                                type=ctype, op=op, kind=kind, elements=n,
                                requests=req))
        finally:
            suite.stop_all(started)


def p50_ratio(c):
    """larder's median latency over redis's (above 1: larder slower); on a
    busy machine the medians move less than the calls/s."""
    lar, red = c.get("larder") or {}, c.get("redis") or {}
    if lar.get("error") or red.get("error") or not lar.get("p50") \
            or not red.get("p50"):
        return "-"
    return "%.2f" % (lar["p50"] / red["p50"])


def render_cardinality(doc, cases):
    lines = ["One collection per type, built with larder-bench --preload "
             "(%d-byte values; members `member:N`, fields `field:N`), "
             "operated on at concurrency 1, pipeline 1 (service time, not "
             "latency under load).  Single-element ops pick a random "
             "existing member (HSET, SADD, ZADD overwrite; LPUSH adds, at "
             "most %d%% of the list per run; LINDEX reads the middle); a "
             "full read returns every element.  Latency p50 / p99 in us, "
             "median of the repetitions; the p50 ratio is larder's over "
             "redis's (above 1: larder slower)." % (CARD_VALUE_BYTES,
                                            CARD_LPUSH_GROWTH * PERCENT), "",
             "| op | elements | calls per run | larder p50/p99 | "
             "redis p50/p99 | p50 larder/redis | larder calls/s | "
             "redis calls/s |",
             "| --- | ---: | ---: | --- | --- | --- | --- | --- |"]
    order = [op for _, op, _, _ in card_ops(0)]
    for c in sorted(cases, key=lambda c: (order.index(c["op"]),
                                          c["elements"])):
        lines.append("| %s | %d | %d | %s | %s | %s | %s | %s |"
                     % (c["op"], c["elements"], c["requests"],
                        suite.fmt_lat(c.get("larder")),
                        suite.fmt_lat(c.get("redis")), p50_ratio(c),
                        suite.fmt_ops(c.get("larder")),
                        suite.fmt_ops(c.get("redis"))))
    lines.append("")
    misses = ["- %s, %s: %.0f calls found nothing" % (c["case"], t,
                                                       c[t]["misses"])
              for c in cases for t in suite.TARGETS
              if (c.get(t) or {}).get("misses")]
    return lines + (misses + [""] if misses else [])


RUN = {"cache": run_cache, "coldstart": run_coldstart, "insert": run_insert,
       "cardinality": run_cardinality}
RENDER = {"cache": render_cache, "coldstart": render_coldstart,
          "insert": render_insert, "cardinality": render_cardinality}
