#!/usr/bin/env python3
"""Summarises the samples of scripts/compare.sh: Markdown tables and PNG plots.

    report.py SAMPLES.CSV OUTDIR [--title TEXT]

SAMPLES.CSV has the columns round,bench,mpi,np,size,median_us,p90_us,mbps,msgrate (one row per
benchmark run per size per round). Writes OUTDIR/summary.csv (per bench, np, size, mpi: the
median over rounds of median_us, p90_us, mbps, msgrate, and the number of rounds),
OUTDIR/summary.md and, when gnuplot is installed, OUTDIR/plots/*.png.

The ratio column is oxmpi / best peer, where the peers are the reference MPIs (mpich, openmpi)
and "best" is the lowest time or the highest bandwidth: for time tables above 1 means oxmpi is
slower; for bandwidth tables below 1 means oxmpi is slower.
"""
import csv
import os
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict

ORDER = ["oxmpi", "mpich", "openmpi", "oxmpi-mpichbin"]
PEERS = ["mpich", "openmpi"]
LABELS = {
    "oxmpi": "oxmpi",
    "mpich": "MPICH",
    "openmpi": "Open MPI",
    "oxmpi-mpichbin": "oxmpi (MPICH binary)",
}


def is_bw(bench):
    return bench in ("bw", "bibw", "mbw_mr") or bench.startswith("vec_bw")


def human(size):
    size = int(size)
    if size >= 1 << 20 and size % (1 << 20) == 0:
        return f"{size >> 20} MiB"
    if size >= 1 << 10 and size % (1 << 10) == 0:
        return f"{size >> 10} KiB"
    return f"{size} B"


def fmt(v, bw):
    if v is None:
        return "–"
    if bw:
        return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"
    return f"{v:.2f}" if v < 100 else f"{v:,.0f}"


def bench_key(b):
    order = ["startup", "latency", "bw", "bibw", "mbw_mr"]
    return (order.index(b) if b in order else len(order), b)


def main():
    args = sys.argv[1:]
    title = "oxmpi vs MPICH vs Open MPI"
    if "--title" in args:
        i = args.index("--title")
        title = args[i + 1]
        del args[i : i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    samples, outdir = args
    os.makedirs(outdir, exist_ok=True)

    runs = defaultdict(list)  # (bench, np, size, mpi) -> rows
    with open(samples, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["bench"], int(row["np"]), int(row["size"]), row["mpi"])
            runs[key].append(row)

    med = {}
    with open(os.path.join(outdir, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["bench", "mpi", "np", "size", "median_us", "p90_us", "mbps", "msgrate", "rounds",
                    "min_median_us", "max_median_us"])
        for key in sorted(runs, key=lambda k: (bench_key(k[0]), k[1], k[2], k[3])):
            rows = runs[key]
            m = {c: statistics.median(float(r[c]) for r in rows)
                 for c in ("median_us", "p90_us", "mbps", "msgrate")}
            lo = min(float(r["median_us"]) for r in rows)
            hi = max(float(r["median_us"]) for r in rows)
            med[key] = m
            b, np_, size, mpi = key
            w.writerow([b, mpi, np_, size, f"{m['median_us']:.3f}", f"{m['p90_us']:.3f}",
                        f"{m['mbps']:.2f}", f"{m['msgrate']:.0f}", len(rows), f"{lo:.3f}", f"{hi:.3f}"])

    mpis = [m for m in ORDER if any(k[3] == m for k in med)]
    mpis += sorted({k[3] for k in med} - set(mpis))
    groups = sorted({(k[0], k[1]) for k in med}, key=lambda g: (bench_key(g[0]), g[1]))

    lines = [f"# {title}", ""]
    lines.append("Medians over rounds of each run's median. Time in µs (per operation; latency: "
                 "half round trip); bandwidth in MB/s (10^6 B/s). Ratio: oxmpi / best of "
                 "MPICH and Open MPI.")
    lines.append("")
    for bench, np_ in groups:
        bw = is_bw(bench)
        metric = "mbps" if bw else "median_us"
        unit = "MB/s, higher is better" if bw else "µs, lower is better"
        lines.append(f"## {bench}, np={np_} ({unit})")
        lines.append("")
        head = ["size"] + [LABELS.get(m, m) for m in mpis] + ["oxmpi / best peer"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---:"] * len(head)) + "|")
        sizes = sorted({k[2] for k in med if k[0] == bench and k[1] == np_})
        for size in sizes:
            vals = {m: med.get((bench, np_, size, m), {}).get(metric) for m in mpis}
            peers = [vals[p] for p in PEERS if vals.get(p) is not None]
            ratio = "–"
            if vals.get("oxmpi") is not None and peers:
                best = max(peers) if bw else min(peers)
                if best > 0:
                    ratio = f"{vals['oxmpi'] / best:.2f}"
            cells = [human(size)] + [fmt(vals[m], bw) for m in mpis] + [ratio]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    with open(os.path.join(outdir, "summary.md"), "w") as f:
        f.write("\n".join(lines))

    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("report.py: gnuplot not found: no plots", file=sys.stderr)
        return
    pdir = os.path.join(outdir, "plots")
    os.makedirs(pdir, exist_ok=True)
    for bench, np_ in groups:
        if bench == "startup":
            continue
        bw = is_bw(bench)
        metric = "mbps" if bw else "median_us"
        series = []
        for m in mpis:
            pts = sorted((k[2], v[metric]) for k, v in med.items()
                         if k[0] == bench and k[1] == np_ and k[3] == m and k[2] > 0 and v[metric] > 0)
            if not pts:
                continue
            dat = os.path.join(pdir, f"{bench}_np{np_}_{m}.dat")
            with open(dat, "w") as f:
                for s, v in pts:
                    f.write(f"{s} {v}\n")
            series.append((m, dat))
        if not series:
            continue
        png = os.path.join(pdir, f"{bench}_np{np_}.png")
        ylabel = "bandwidth (MB/s)" if bw else "time (µs)"
        plots = ", ".join(f"'{d}' using 1:2 with linespoints title '{LABELS.get(m, m)}'" for m, d in series)
        script = "\n".join([
            "set terminal pngcairo size 720,440 font 'sans,10'",
            f"set output '{png}'",
            f"set title '{bench}, np={np_}'",
            "set logscale x 2",
            "set logscale y",
            "set format x '%.0b%B'",
            "set xlabel 'message size (bytes)'",
            f"set ylabel '{ylabel}'",
            "set grid",
            "set key top left" if bw else "set key bottom right",
            f"plot {plots}",
            "",
        ])
        subprocess.run([gnuplot], input=script.encode(), check=True)
        for _, d in series:
            os.remove(d)


if __name__ == "__main__":
    main()
