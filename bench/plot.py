"""plot: bench/run's charts, drawn with gnuplot (Debian: gnuplot-nox).

One PNG per section of a result file, NAME-SECTION.png beside NAME.json:
throughput (median, with the min-max of the repetitions as error bars)
and p99 latency (log scale), larder beside redis-server, case by case.
Each open-loop case gets NAME-SECTION-CASE-timeline.png as well: the
slowest operation of each second (larder-bench's timeseries_max) of every
repetition, larder and redis, so a stall shows where it happened.
"""

import os
import shutil
import subprocess
import sys
import tempfile

TARGETS = ("larder", "redis")
COLOURS = {"larder": "#c0392b", "redis": "#2c3e50"}
WIDTH_PER_CASE = 90
MIN_WIDTH, MAX_WIDTH, HEIGHT = 640, 1800, 720
TIMELINE_SIZE = (900, 420)


def available():
    """Is gnuplot installed?"""
    return shutil.which("gnuplot") is not None


def _label(text):
    return text.replace('"', "'").replace("_", "-")


def _num(v):
    return "NaN" if v is None else repr(float(v))


def _cases(doc, section):
    return [c for c in doc.get("cases", [])
            if c.get("section") == section and
            any(isinstance(c.get(t), dict) and
                c[t].get("ops_per_sec") is not None for t in TARGETS)]


def _bars_script(data, png, title, n, ops_of, p99_of):
    """ops_of, p99_of: the targets with figures of each kind (gnuplot
    refuses a column without a single valid point)."""
    width = max(MIN_WIDTH, min(MAX_WIDTH, WIDTH_PER_CASE * n + 200))
    names = {"larder": "larder", "redis": "redis-server"}
    ops_col = {"larder": 2, "redis": 5}
    p99_col = {"larder": 8, "redis": 9}
    lines = [
        'set terminal pngcairo size %d,%d font ",9"'
        % (width, HEIGHT if p99_of else HEIGHT // 2),
        'set output "%s"' % png,
        "set multiplot layout %d,1 title \"%s\""
        % (2 if p99_of else 1, _label(title)),
        "set style data histograms",
        "set style histogram errorbars gap 1 lw 1",
        "set style fill solid 0.8 border -1",
        "set xtics rotate by -30 scale 0",
        "set grid ytics",
        "set key top right",
        'set ylabel "ops/s (median, min-max)"',
        "set yrange [0:*]",
        "plot " + ", ".join(
            '"%s" using %d:%d:%d:xtic(1) title "%s" lc rgb "%s"'
            % (data, ops_col[t], ops_col[t] + 1, ops_col[t] + 2, names[t],
               COLOURS[t]) for t in ops_of),
    ]
    if p99_of:
        lines += [
            "set style histogram clustered gap 1",
            'set ylabel "p99 latency, µs (log)"',
            "set logscale y",
            "set yrange [*:*]",
            "plot " + ", ".join(
                '"%s" using %d:xtic(1) title "%s" lc rgb "%s"'
                % (data, p99_col[t], names[t], COLOURS[t]) for t in p99_of),
        ]
    lines.append("unset multiplot")
    return "\n".join(lines) + "\n"


def _timeline_script(files, png, title):
    plots = []
    for target, path, rep in files:
        plots.append('"%s" using 1:2 with lines lw 1.5 lc rgb "%s" '
                     'title "%s rep %d"' % (path, COLOURS[target],
                                            target, rep + 1))
    lines = [
        'set terminal pngcairo size %d,%d font ",9"' % TIMELINE_SIZE,
        'set output "%s"' % png,
        'set title "%s"' % _label(title),
        'set xlabel "second of the run"',
        'set ylabel "slowest operation, µs (log)"',
        "set logscale y",
        "set grid",
        "set key outside right",
        "plot " + ", ".join(plots),
    ]
    return "\n".join(lines) + "\n"


def _gnuplot(script, tmp):
    path = os.path.join(tmp, "plot.gp")
    with open(path, "w") as f:
        f.write(script)
    r = subprocess.run(["gnuplot", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("gnuplot failed: %s" % r.stderr.strip()[-500:])


def draw(doc, out_dir, stem):
    """Draw every section of doc into out_dir as STEM-SECTION[...].png;
    the list of files written. A section gnuplot fails on is reported on
    stderr and skipped."""
    written = []
    sections = []
    for c in doc.get("cases", []):
        if c.get("section") not in sections:
            sections.append(c.get("section"))
    with tempfile.TemporaryDirectory(prefix="larder-plot-") as tmp:
        for section in sections:
            cases = _cases(doc, section)
            if not cases:
                continue
            data = os.path.join(tmp, "%s.dat" % section)
            with open(data, "w") as f:
                for c in cases:
                    row = ['"%s"' % _label(c["case"])]
                    for t in TARGETS:
                        r = c.get(t) if isinstance(c.get(t), dict) else {}
                        row += [_num(r.get("ops_per_sec")),
                                _num(r.get("ops_per_sec_min")),
                                _num(r.get("ops_per_sec_max"))]
                    for t in TARGETS:
                        r = c.get(t) if isinstance(c.get(t), dict) else {}
                        row.append(_num(r.get("p99")))
                    f.write(" ".join(row) + "\n")
            def having(fig):
                return [t for t in TARGETS
                        if any(isinstance(c.get(t), dict) and
                               c[t].get(fig) is not None for c in cases)]
            png = os.path.join(out_dir, "%s-%s.png" % (stem, section))
            try:
                _gnuplot(_bars_script(data, png, "%s: %s" % (stem, section),
                                      len(cases), having("ops_per_sec"),
                                      having("p99")), tmp)
            except RuntimeError as e:
                print("plot: %s: %s" % (section, e), file=sys.stderr)
                continue
            written.append(png)
            for c in cases:
                files = []
                for t in TARGETS:
                    r = c.get(t) if isinstance(c.get(t), dict) else {}
                    for rep, run in enumerate(r.get("runs") or []):
                        series = run.get("timeseries_max")
                        if not series:
                            continue
                        path = os.path.join(tmp, "%s-%d.dat" % (t, rep))
                        with open(path, "w") as f:
                            for i, v in enumerate(series):
                                f.write("%d %s\n" % (i + 1, _num(v)))
                        files.append((t, path, rep))
                if not files:
                    continue
                case_name = c["case"].replace("/", "_").replace(" ", "_")
                png = os.path.join(out_dir, "%s-%s-%s-timeline.png"
                                   % (stem, section, case_name))
                try:
                    _gnuplot(_timeline_script(
                        files, png, "%s: %s/%s, open loop"
                        % (stem, section, c["case"])), tmp)
                    written.append(png)
                except RuntimeError as e:
                    print("plot: %s/%s timeline: %s" % (section, c["case"], e),
                          file=sys.stderr)
    return written
