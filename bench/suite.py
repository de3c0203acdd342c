"""suite: the machinery every section of bench/run shares.

A Suite holds the settings of one bench/run invocation and starts fresh
server pairs; measure() runs one larder-bench command line against each
server of a pair, repetitions interleaved (larder, redis, redis, larder
...), and keeps every run; case() turns that into a case of the result
file: per server the medians with min-max, or the reason it failed.

A failure belongs to one server, not to the case: a command larder lacks
(its pub/sub, its MULTI, on a branch that has not merged them yet), a
server that died, a run with no successful operation, a transfer whose
total changed.  The failed server's column says why; the other server's
figures are kept; the suite goes on and exits 1 at the end.
"""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

# Figures every larder-bench run has, kept as medians.
FIGURES = ("ops_per_sec", "p50", "p90", "p99", "p999", "max", "mean",
           "client_cpu_s", "server_cpu_s")
# Workload-specific figures kept (as medians) when a case has them.
EXTRA_FIGURES = ("keys_per_sec", "commits_per_sec", "aborts_per_sec",
                 "delivered_per_sec", "delivery_p99", "server_proc_cpu_s",
                 "misses", "hits", "hit_ratio", "cache_hits", "cache_misses")
TARGETS = ("larder", "redis")
MIB = 1024.0 * 1024.0
# Seeds of the repetitions: 1000, 1001, ...
SEED_BASE = 1000
# Kinds of errors quoted when no operation of a run succeeded.
ERROR_KINDS_QUOTED = 3
# Characters of a failure shown in a report's table cell (the whole
# message follows the table).
CELL_ERROR_CHARS = 70


class Suite:
    """Settings of one bench/run invocation and the binaries it runs."""

    def __init__(self, args, params, larder, redis):
        self.args = args
        self.p = params
        self.quick = args.quick
        self.mode = "quick" if args.quick else "full"
        self.larder = larder
        self.redis = redis
        self.bench = args.bench
        self.reps = args.reps
        self.threads = args.threads
        self.larder_args = list(args.larder_arg)

    def make_servers(self, larder_args=(), redis_args=(), keep=False,
                     targets=TARGETS):
        """Server objects (not started) for larder and/or redis (of
        targets, those this run measures); with keep their directories
        survive stop() and the caller removes them."""
        servers = []
        if self.larder and "larder" in targets:
            servers.append(benchlib.larder_server(
                self.larder, self.larder_args + list(larder_args),
                keep_dir=tempfile.mkdtemp(
                    prefix="larder-bench-larder-") if keep else None))
        if self.redis and "redis" in targets:
            servers.append(benchlib.redis_server(
                self.redis, extra_args=redis_args,
                keep_dir=tempfile.mkdtemp(
                    prefix="larder-bench-redis-") if keep else None))
        return servers

    def start(self, larder_args=(), redis_args=(), keep=False,
              targets=TARGETS):
        """Start a fresh larder and/or redis.  Returns (running servers,
        {target: error} for any that would not start)."""
        running, failed = [], {}
        servers = self.make_servers(larder_args, redis_args, keep, targets)
        try:
            for srv in servers:
                try:
                    running.append(srv.start())
                except RuntimeError as e:  # start() cleaned up after it
                    failed[srv.name] = "did not start: %s" % e
                    if keep:
                        shutil.rmtree(srv.workdir, ignore_errors=True)
        except BaseException:
            # Ctrl-C between two starts: leave nothing behind.
            for srv in servers:
                srv.stop()
                if keep:
                    shutil.rmtree(srv.workdir, ignore_errors=True)
            raise
        return running, failed

    def prepare(self, servers, errors, step):
        """Run step(srv) on each server (loading data, say); a server whose
        step fails gets its message in errors and leaves the list, which
        is returned."""
        ok = []
        for srv in servers:
            try:
                step(srv)
                ok.append(srv)
            except (RuntimeError, OSError, benchlib.RespError) as e:
                errors[srv.name] = "set-up failed: %s" % e
        return ok

    def bench_run(self, srv, bench_args, bound):
        """One larder-bench run against srv: its JSON.  Raises RuntimeError
        (with the server's log when the server died) on failure."""
        if srv.exited() is not None:
            raise RuntimeError("%s had exited (status %s) before the run; "
                               "log: %s" % (srv.name, srv.exited(),
                                            srv.log_tail()))
        try:
            return benchlib.run_bench(self.bench, srv.port, bench_args, bound,
                                      alive=lambda: srv.exited() is None)
        except RuntimeError as e:
            status = srv.exited()
            if status is not None:
                raise RuntimeError("%s exited (status %s) during the run; "
                                   "log: %s" % (srv.name, status,
                                                srv.log_tail()))
            raise RuntimeError(str(e).strip().splitlines()[-1][:300])


def stop_all(servers):
    for srv in servers:
        srv.stop()


def order(servers, rep):
    """Alternate which server goes first, repetition by repetition."""
    return servers if rep % 2 == 0 else list(reversed(servers))


def run_figures(doc):
    """The figures of one larder-bench run that the suite keeps."""
    run = {fig: doc.get(fig) for fig in FIGURES}
    run["errors_total"] = doc.get("errors_total", 0)
    run["errors"] = doc.get("errors", {})
    if doc.get("error_samples"):
        run["error_samples"] = doc["error_samples"]
    for key in ("keys_per_sec", "misses", "hits"):
        if doc.get(key) is not None:
            run[key] = doc[key]
    # Open loop: the slowest operation of each second, for the timeline
    # chart (bench/plot.py).
    if doc.get("open_loop") and doc.get("timeseries_max"):
        run["timeseries_max"] = doc["timeseries_max"]
    transfer = doc.get("transfer") or {}
    if transfer:
        run["commits_per_sec"] = transfer.get("commits_per_sec")
        run["aborts_per_sec"] = transfer.get("aborts_per_sec")
        run["verify"] = transfer.get("verify")
    pubsub = doc.get("pubsub") or {}
    if pubsub:
        run["delivered_per_sec"] = pubsub.get("delivered_per_sec")
        run["delivery_p99"] = pubsub.get("p99")
    return run


def run_failure(srv, run):
    """Why a run that completed still counts as a failure, or None."""
    if srv.exited() is not None:
        return "%s exited (status %s); log: %s" % (srv.name, srv.exited(),
                                                   srv.log_tail())
    if run.get("verify") == "fail":
        return "transfer total changed: WATCH/MULTI/EXEC lost updates"
    if not run.get("ops_per_sec") and run.get("errors_total"):
        kinds = sorted(run["errors"].items(), key=lambda kv: -kv[1])
        samples = run.get("error_samples") or {}
        return "no successful operation; errors: %s" % ", ".join(
            "%s x%d%s" % (kind, n, " (first: %s)" % samples[kind]
                          if kind in samples else "")
            for kind, n in kinds[:ERROR_KINDS_QUOTED])
    return None


def measure(suite, servers, bench_args, common, reps=None,
            preload_first=True, bound=None, before=None, after=None):
    """Run bench_args + common against every server, reps times each,
    interleaved.  The first repetition adds --preload when preload_first.
    before(srv) -> token and after(srv, token, run) may add figures to a
    run (e.g. cache hit deltas).  A server that fails stops being run.

    Returns {target: {"runs": [...], "error": str or None, "info": INFO
    server, "settings": larder-bench's settings}}.
    """
    reps = suite.reps if reps is None else reps
    if bound is None:
        bound = suite.p["duration"] + suite.p["warmup"]
    out = {s.name: {"runs": [], "error": None, "info": None,
                    "settings": None} for s in servers}
    for rep in range(reps):
        for srv in order(servers, rep):
            res = out[srv.name]
            if res["error"]:
                continue
            extra = ["--seed", SEED_BASE + rep]
            if rep == 0 and preload_first:
                extra.append("--preload")
            token = before(srv) if before else None
            cpu0 = srv.cpu_seconds()
            try:
                doc = suite.bench_run(srv, list(bench_args) + list(common)
                                      + extra, bound)
            except RuntimeError as e:
                res["error"] = str(e)
                continue
            cpu1 = srv.cpu_seconds()
            run = run_figures(doc)
            # Sampled from /proc for the whole process tree, so it covers
            # a pre-forked server whose INFO has no cpu section.
            if cpu0 is not None and cpu1 is not None:
                run["server_proc_cpu_s"] = round(cpu1 - cpu0, 3)
            if after:
                try:
                    after(srv, token, run)
                except (OSError, benchlib.RespError) as e:
                    res["error"] = "after the run: %s" % e
            res["info"] = res["info"] or doc.get("server")
            res["settings"] = res["settings"] or doc.get("settings")
            res["runs"].append(run)
            res["error"] = res["error"] or run_failure(srv, run)
    return out


def summarise(runs, value_bytes=None):
    """Median, min and max over the runs of one server."""
    res = {"runs": runs}
    for fig in FIGURES:
        res[fig] = benchlib.median([r.get(fig) for r in runs])
    ops = [r["ops_per_sec"] for r in runs if r.get("ops_per_sec") is not None]
    res["ops_per_sec_min"] = min(ops) if ops else None
    res["ops_per_sec_max"] = max(ops) if ops else None
    res["errors_total"] = sum(r.get("errors_total", 0) for r in runs)
    errors = {}
    for r in runs:
        for kind, n in (r.get("errors") or {}).items():
            errors[kind] = errors.get(kind, 0) + n
    if errors:
        res["errors"] = errors
    for key in EXTRA_FIGURES:
        vals = [r.get(key) for r in runs if r.get(key) is not None]
        if vals:
            res[key] = benchlib.median(vals)
            res[key + "_min"] = min(vals)
            res[key + "_max"] = max(vals)
    if any("verify" in r for r in runs):
        res["verify"] = ("pass" if all(r.get("verify") == "pass"
                                       for r in runs) else "fail")
    if value_bytes and res["ops_per_sec"]:
        res["mib_per_sec"] = res["ops_per_sec"] * value_bytes / MIB
    return res


def case(section, name, args, measured, errors=None, value_bytes=None,
         **fields):
    """A case of the result file from measure()'s output; errors
    {target: message} marks servers that never started or failed their
    set-up.  Extra fields (keys, dist ...) are stored as they are."""
    c = {"section": section, "case": name, "args": [str(a) for a in args]}
    c.update(fields)
    settings = None
    for target, res in measured.items():
        settings = settings or res["settings"]
        summary = summarise(res["runs"], value_bytes) if res["runs"] else {}
        if res["error"]:
            summary["error"] = res["error"]
        summary["server_info"] = res["info"]
        c[target] = summary
    for target, err in (errors or {}).items():
        c[target] = {"error": err}
    c["settings"] = settings
    lar, red = c.get("larder") or {}, c.get("redis") or {}
    if (not lar.get("error") and not red.get("error")
            and lar.get("ops_per_sec") and red.get("ops_per_sec")):
        c["ratio"] = lar["ops_per_sec"] / red["ops_per_sec"]
    return c


def summarise_figures(runs, names):
    """Median, min and max of the named figures over runs (for sections
    whose runs are not larder-bench runs, e.g. cold start times)."""
    res = {"runs": runs}
    for key in names:
        vals = [r.get(key) for r in runs if r.get(key) is not None]
        if vals:
            res[key] = benchlib.median(vals)
            res[key + "_min"] = min(vals)
            res[key + "_max"] = max(vals)
    return res


def failures(c):
    """[(target, message)] of a case's failed servers."""
    out = [(t, c[t]["error"]) for t in TARGETS
           if isinstance(c.get(t), dict) and c[t].get("error")]
    if c.get("error"):
        out.append(("case", c["error"]))
    return out


# --- report helpers ------------------------------------------------------

def fmt_ops(res):
    if not res:
        return "-"
    if res.get("error"):
        return "failed: %s" % short(res["error"], CELL_ERROR_CHARS)
    if res.get("ops_per_sec") is None:
        return "-"
    return "%.0f (%.0f-%.0f)" % (res["ops_per_sec"], res["ops_per_sec_min"],
                                 res["ops_per_sec_max"])


def fmt_headline(res):
    """The main figure of one server in a case, for a progress line."""
    if not res:
        return "-"
    if res.get("error"):
        return "FAILED"
    if res.get("skipped"):
        return "(%s)" % res["skipped"]
    if res.get("first_get_ms") is not None:
        return "first GET %.1f ms" % res["first_get_ms"]
    return fmt_ops(res)


def fmt_lat(res):
    if not res or res.get("error") or res.get("p50") is None:
        return "-"
    return "%.1f / %.1f" % (res["p50"], res["p99"])


def fmt_ratio(c):
    return "%.2f" % c["ratio"] if c.get("ratio") else "-"


def short(text, limit=160):
    """One line of at most limit characters, safe in a Markdown table."""
    line = " ".join(str(text).split()).replace("|", "/")
    return line if len(line) <= limit else line[:limit - 3] + "..."
