"""benchlib: shared helpers of bench/run, bench/compare, bench/gate, bench/smoke.

Starting and stopping servers on free loopback ports (only processes this
module started are ever signalled, by their pid), running larder-bench with
a time bound, medians, and reading either a larder-bench JSON object or a
suite result file into flat figures that compare and gate can match.
Python 3 standard library only.
"""

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time

LOOPBACK = "127.0.0.1"
SERVER_START_TIMEOUT_S = 20.0
SERVER_STOP_TIMEOUT_S = 10.0
POLL_INTERVAL_S = 0.05
# larder-bench gets its own duration plus this much before it is killed.
RUN_SLACK_S = 60.0

# Figures compare and gate look at, and which way is better.
HIGHER_IS_BETTER = {"ops_per_sec": True, "delivered_per_sec": True,
                    "p50": False, "p90": False, "p99": False, "p999": False,
                    "max": False, "mean": False}
DEFAULT_GATE_FIGURES = ("ops_per_sec", "p99")


def free_port():
    """A TCP port on the loopback that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def ping(port, timeout=1.0):
    """True when a RESP server on port answers PING with +PONG."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=timeout) as s:
            s.sendall(b"*1\r\n$4\r\nPING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(pid):
    """(ppid, utime + stime in ticks) of a process, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            text = f.read()
    except OSError:
        return None
    # The command name may hold spaces; fields resume after its ')'.
    rest = text[text.rindex(")") + 2:].split()
    return int(rest[1]), int(rest[11]) + int(rest[12])


def tree_cpu_seconds(root):
    """CPU seconds (user + system) of root and all its descendants, from
    /proc: counts a pre-forked server's workers too.  None without /proc."""
    if not os.path.isdir("/proc/%d" % root):
        return None
    parent, ticks = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name))
        if fields:
            parent[int(name)], ticks[int(name)] = fields
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo.extend(p for p, pp in parent.items() if pp == pid)
    return total / float(CLOCK_TICKS)


class Server:
    """One server process we started; stop() signals only its pid."""

    def __init__(self, name, argv, port, workdir, cleanup_dir):
        self.name = name
        self.argv = argv
        self.port = port
        self.workdir = workdir
        self.cleanup_dir = cleanup_dir
        self.log_path = os.path.join(workdir, name + ".log")
        self.proc = None

    def start(self):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=log,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL,
                                     cwd=self.workdir)
        log.close()
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited at start (status %s), see %s"
                                   % (self.name, self.proc.returncode,
                                      self.log_path))
            if ping(self.port):
                return self
            time.sleep(POLL_INTERVAL_S)
        self.stop()
        raise RuntimeError("%s did not answer PING within %.0fs, see %s"
                           % (self.name, SERVER_START_TIMEOUT_S,
                              self.log_path))

    def cpu_seconds(self):
        """CPU seconds used so far by the server and its children."""
        if self.proc is None:
            return None
        return tree_cpu_seconds(self.proc.pid)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=SERVER_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.cleanup_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def redis_server(path, keep_dir=None):
    """A fresh redis-server without persistence on a free port."""
    port = free_port()
    workdir = keep_dir or tempfile.mkdtemp(prefix="larder-bench-redis-")
    argv = [path, "--port", str(port), "--bind", LOOPBACK, "--save", "",
            "--appendonly", "no", "--dir", workdir]
    return Server("redis", argv, port, workdir, keep_dir is None)


def larder_server(path, extra_args=(), keep_dir=None):
    """A fresh larder-server with an empty data directory on a free port."""
    port = free_port()
    workdir = keep_dir or tempfile.mkdtemp(prefix="larder-bench-larder-")
    datadir = os.path.join(workdir, "data")
    os.makedirs(datadir, exist_ok=True)
    argv = [path, "--port", str(port), "--dir", datadir] + list(extra_args)
    return Server("larder", argv, port, workdir, keep_dir is None)


def run_bench(bench, port, args, time_bound_s):
    """Run larder-bench --json against port; returns its parsed JSON.

    Raises RuntimeError when it fails or outlives time_bound_s + slack.
    Exit status 3 (transfer mismatch) still returns the JSON, with the
    verdict inside it.
    """
    argv = [bench, "-h", LOOPBACK, "-p", str(port), "--json", "--quiet"]
    argv += [str(a) for a in args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True,
                              errors="replace",
                              timeout=time_bound_s + RUN_SLACK_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError("timed out: " + " ".join(argv))
    if done.returncode not in (0, 3) or not done.stdout.strip():
        raise RuntimeError("larder-bench failed (%d): %s\n%s"
                           % (done.returncode, " ".join(argv),
                              done.stderr.strip()))
    return json.loads(done.stdout)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def load(path):
    with open(path) as f:
        return json.load(f)


def flatten(doc):
    """Figures of a result file as {name: value}.

    A larder-bench object gives "ops_per_sec", "p99" ...; a suite file
    gives "section/case/target/figure" for every case and target.
    """
    flat = {}
    if "cases" in doc:
        for case in doc["cases"]:
            for target in ("larder", "redis"):
                res = case.get(target)
                if not res:
                    continue
                for fig in HIGHER_IS_BETTER:
                    if res.get(fig) is not None:
                        key = "%s/%s/%s/%s" % (case["section"], case["case"],
                                               target, fig)
                        flat[key] = res[fig]
        return flat
    for fig in HIGHER_IS_BETTER:
        if doc.get(fig) is not None:
            flat[fig] = doc[fig]
    pubsub = doc.get("pubsub") or {}
    if pubsub.get("delivered_per_sec") is not None:
        flat["delivered_per_sec"] = pubsub["delivered_per_sec"]
    return flat


def ranges(doc):
    """(min, max) over the repetitions of every figure flatten() gives."""
    out = {}

    def add(prefix, runs):
        for fig in HIGHER_IS_BETTER:
            vals = [r.get(fig) for r in runs if r.get(fig) is not None]
            if vals:
                out[prefix + fig] = (min(vals), max(vals))

    if "cases" in doc:
        for case in doc["cases"]:
            for target in ("larder", "redis"):
                res = case.get(target)
                if res and res.get("runs"):
                    add("%s/%s/%s/" % (case["section"], case["case"], target),
                        res["runs"])
    elif doc.get("runs"):
        add("", doc["runs"])
    return out


def figure_of(key):
    return key.rsplit("/", 1)[-1]


def change(old, new, fig):
    """(percent change, regression percent) of a figure from old to new.

    The regression is positive when new is worse: lower throughput or
    higher latency.
    """
    if old is None or new is None or old == 0:
        return None, None
    pct = (new - old) / old * 100.0
    worse = -pct if HIGHER_IS_BETTER.get(fig, True) else pct
    return pct, worse


def git_commit(repo_dir):
    """HEAD of the repository at repo_dir, or "unknown"."""
    try:
        out = subprocess.run(["git", "-C", repo_dir, "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    head = out.stdout.strip()
    if out.returncode != 0 or len(head) != 40:
        return "unknown"
    return head


def machine_facts(bench_path):
    """CPU model, cores, kernel and the git commit of this checkout."""
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and ":" in line:
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return {"git_commit": git_commit(repo),
            "machine": {"cpu_model": model, "cores": os.cpu_count(),
                        "kernel": " ".join(os.uname()[0:3:2])}}


def write_json(path, doc):
    """Write doc to path atomically (a reader never sees half a file)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)
