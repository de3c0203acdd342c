"""benchlib: shared helpers of bench/run, bench/compare, bench/gate, bench/smoke.

Starting, stopping and killing servers on free loopback ports (only
processes this module started, and their descendants, are ever signalled,
by their pid), a small blocking RESP client (INFO, DBSIZE, SAVE, polling a
restarting server), running larder-bench with a time bound, medians, and
reading either a larder-bench JSON object or a suite result file into flat
figures that compare and gate can match.  Python 3 standard library only.
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
POLL_INTERVAL_S = 0.01
# larder-bench gets its own duration plus this much before it is killed.
RUN_SLACK_S = 60.0
# How often a running larder-bench's server is checked, and how long
# larder-bench may go on after its server died (to report what it saw).
WATCH_INTERVAL_S = 0.1
DEAD_SERVER_GRACE_S = 1.0

# A killed process tree must be gone within this long.
KILL_TIMEOUT_S = 10.0
# Lines of a server's log quoted when it failed.
LOG_TAIL_LINES = 5
CLIENT_TIMEOUT_S = 30.0

# Figures compare and gate look at, and which way is better.
HIGHER_IS_BETTER = {"ops_per_sec": True, "delivered_per_sec": True,
                    "p50": False, "p90": False, "p99": False, "p999": False,
                    "max": False, "mean": False, "hit_ratio": True,
                    "first_reply_ms": False, "first_get_ms": False}
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


def _all_stat_fields():
    """{pid: (ppid, cpu ticks)} of every process in /proc."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat_fields(int(name))
            if fields:
                out[int(name)] = fields
    return out


def _descendants(root, table):
    """root and every process below it in a {pid: (ppid, ...)} table."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(p for p, f in table.items() if f[0] == pid)
    return found


def tree_cpu_seconds(root):
    """CPU seconds (user + system) of root and all its descendants, from
    /proc: counts a pre-forked server's workers too.  None without /proc."""
    if not os.path.isdir("/proc/%d" % root):
        return None
    table = _all_stat_fields()
    total = sum(table[pid][1] for pid in _descendants(root, table)
                if pid in table)
    return total / float(CLOCK_TICKS)


def _start_time(pid):
    """The kernel's start time of pid (field 22), to tell a process from a
    later one that reused its pid; None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            text = f.read()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()
    if rest[0] == "Z":
        return None  # exited, waiting to be reaped: gone for our purposes
    return int(rest[19])


# Start time of a pid tree_pids() could not look up (no /proc): signal it
# without the check.
START_UNKNOWN = -1


def tree_pids(root):
    """[(pid, start time)] of root and its running descendants, for
    tree_kill() and tree_wait_gone()."""
    if not os.path.isdir("/proc"):
        return [(root, START_UNKNOWN)]
    table = _all_stat_fields()
    found = [(pid, _start_time(pid)) for pid in _descendants(root, table)]
    return [(pid, started) for pid, started in found if started is not None]


def _still_running(pid, started):
    if started == START_UNKNOWN:
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False
    return _start_time(pid) == started


def tree_kill(pids, sig=signal.SIGKILL):
    """Send sig to each (pid, start time) that is still that process (a
    pid reused by another process is left alone)."""
    for pid, started in pids:
        if not _still_running(pid, started):
            continue
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def tree_wait_gone(pids, timeout=KILL_TIMEOUT_S):
    """Wait until none of pids runs any more; True when they are gone."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_still_running(pid, started) for pid, started in pids):
            return True
        time.sleep(POLL_INTERVAL_S / 10)
    return False


class Server:
    """One server process we started.  stop() and kill9() signal only its
    pid and the pids of its descendants (a pre-forked server's workers)."""

    def __init__(self, name, argv, port, workdir, cleanup_dir):
        self.name = name
        self.argv = argv
        self.port = port
        self.workdir = workdir
        self.cleanup_dir = cleanup_dir
        self.log_path = os.path.join(workdir, name + ".log")
        self.proc = None

    def spawn(self):
        """Start the process and return at once (the caller polls)."""
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=log,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL,
                                     cwd=self.workdir)
        log.close()

    def exited(self):
        """The exit status if the server has exited, else None."""
        return None if self.proc is None else self.proc.poll()

    def log_tail(self, lines=LOG_TAIL_LINES):
        """The last lines of the server's log, for an error message."""
        try:
            with open(self.log_path, errors="replace") as f:
                return " | ".join(f.read().strip().splitlines()[-lines:])
        except OSError:
            return ""

    def start(self):
        """Spawn and wait until the server answers PING.  On failure the
        server is stopped (its directory removed unless kept) and a
        RuntimeError says why, with the last lines of its log."""
        try:
            self.spawn()
        except OSError as e:
            self.stop()
            raise RuntimeError("%s could not be started: %s" % (self.name, e))
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._fail("%s exited at start (status %s)"
                           % (self.name, self.proc.returncode))
            if ping(self.port):
                return self
            time.sleep(POLL_INTERVAL_S)
        self._fail("%s did not answer PING within %.0fs"
                   % (self.name, SERVER_START_TIMEOUT_S))

    def _fail(self, message):
        tail = self.log_tail()
        self.stop()
        raise RuntimeError(message + ("; log: %s" % tail if tail else ""))

    def cpu_seconds(self):
        """CPU seconds used so far by the server and its children."""
        if self.proc is None:
            return None
        return tree_cpu_seconds(self.proc.pid)

    def halt(self):
        """SIGTERM and wait (SIGKILL after SERVER_STOP_TIMEOUT_S); any
        descendant still running afterwards is killed too.  Keeps the
        working directory, so the server can start again on its data.
        Returns the seconds the clean stop took, or None if it was not
        running."""
        if self.proc is None:
            return None
        took = None
        pids = tree_pids(self.proc.pid)
        if self.proc.poll() is None:
            t0 = time.monotonic()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=SERVER_STOP_TIMEOUT_S)
                took = time.monotonic() - t0
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        tree_kill(pids[1:])
        tree_wait_gone(pids)
        self.proc = None
        return took

    def kill9(self):
        """SIGKILL the server and every descendant at once, as a crash or
        an OOM kill would, and wait until they are gone."""
        if self.proc is None:
            return
        pids = tree_pids(self.proc.pid)
        tree_kill(pids)
        self.proc.wait()
        if not tree_wait_gone(pids):
            raise RuntimeError("%s: processes survived SIGKILL" % self.name)
        self.proc = None

    def stop(self):
        self.halt()
        if self.cleanup_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _exe(path):
    """path made absolute when it names a file (servers run in their own
    directory); a bare name is left for PATH."""
    return os.path.abspath(path) if os.sep in path else path


def redis_server(path, keep_dir=None, extra_args=()):
    """A fresh redis-server without persistence on a free port; extra_args
    come last and win (e.g. --appendonly yes --appendfsync always)."""
    path = _exe(path)
    port = free_port()
    workdir = keep_dir or tempfile.mkdtemp(prefix="larder-bench-redis-")
    argv = [path, "--port", str(port), "--bind", LOOPBACK, "--save", "",
            "--appendonly", "no", "--dir", workdir] + [str(a) for a in
                                                       extra_args]
    return Server("redis", argv, port, workdir, keep_dir is None)


def larder_server(path, extra_args=(), keep_dir=None):
    """A fresh larder-server with an empty data directory (workdir/data)
    on a free port."""
    path = _exe(path)
    port = free_port()
    workdir = keep_dir or tempfile.mkdtemp(prefix="larder-bench-larder-")
    datadir = os.path.join(workdir, "data")
    os.makedirs(datadir, exist_ok=True)
    argv = [path, "--port", str(port), "--dir", datadir] + [
        str(a) for a in extra_args]
    return Server("larder", argv, port, workdir, keep_dir is None)


class RespError(Exception):
    """The server answered an error reply; str() is its text."""


class Client:
    """A small blocking RESP2 client for the suite's bookkeeping (INFO,
    DBSIZE, SAVE, polling): not for load, larder-bench does that."""

    def __init__(self, port, timeout=CLIENT_TIMEOUT_S):
        self.sock = socket.create_connection((LOOPBACK, port),
                                             timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rb")

    def close(self):
        self.f.close()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read(self):
        line = self.f.readline()
        if not line.endswith(b"\r\n"):
            raise OSError("connection closed mid-reply")
        kind, body = line[:1], line[1:-2]
        if kind == b"+":
            return body.decode(errors="replace")
        if kind == b"-":
            return RespError(body.decode(errors="replace"))
        if kind == b":":
            return int(body)
        if kind == b"$":
            n = int(body)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            if len(data) != n + 2:
                raise OSError("connection closed mid-reply")
            return data[:-2]
        if kind == b"*":
            n = int(body)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise OSError("protocol error: %r" % line[:40])

    def command(self, *args):
        """Send one command; returns its reply (bytes, str, int, None, a
        list), or raises RespError on an error reply."""
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        reply = self._read()
        if isinstance(reply, RespError):
            raise reply
        return reply

    def info(self, section):
        """INFO section as {field: value}, numbers as numbers."""
        text = self.command("INFO", section)
        out = {}
        for line in (text or b"").decode(errors="replace").splitlines():
            if ":" not in line or line.startswith("#"):
                continue
            k, v = line.split(":", 1)
            try:
                out[k] = int(v)
            except ValueError:
                try:
                    out[k] = float(v)
                except ValueError:
                    out[k] = v
        return out


def info(port, section):
    """INFO section of the server on port (see Client.info)."""
    with Client(port) as c:
        return c.info(section)


def run_bench(bench, port, args, time_bound_s, alive=None):
    """Run larder-bench --json against port; returns its parsed JSON.

    Raises RuntimeError when it fails or outlives time_bound_s + slack,
    or, given alive (a callable), soon after alive() turns false: a run
    against a server that died would otherwise retry its connections
    until its own timeout.  Exit status 3 (transfer mismatch) still
    returns the JSON, with the verdict inside it.
    """
    argv = [bench, "-h", LOOPBACK, "-p", str(port), "--json", "--quiet"]
    argv += [str(a) for a in args]
    deadline = time.monotonic() + time_bound_s + RUN_SLACK_S
    dead_since = None
    with subprocess.Popen(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True,
                          errors="replace") as proc:
        while True:
            try:
                out, err = proc.communicate(timeout=WATCH_INTERVAL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if alive is not None and dead_since is None and not alive():
                dead_since = now
            if now > deadline or (dead_since is not None and
                                  now - dead_since > DEAD_SERVER_GRACE_S):
                proc.kill()
                proc.communicate()
                raise RuntimeError("%s: %s" % (
                    "the server died" if dead_since is not None
                    else "timed out", " ".join(argv)))
    if proc.returncode not in (0, 3) or not out.strip():
        raise RuntimeError("larder-bench failed (%d): %s\n%s"
                           % (proc.returncode, " ".join(argv), err.strip()))
    return json.loads(out)


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
