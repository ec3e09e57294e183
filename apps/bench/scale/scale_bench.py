#!/usr/bin/env python3
"""Driver of the scale benchmarks, called by run_cpu.sh and run_gpu.sh.

For each workload it generates the data (generate.py, into --work), runs `meanshift` with its
default options (only the bandwidth, which `cluster` requires), then the peer on the same files, and
measures both the same way: wall time, user + system CPU time and peak resident memory of the process
(/usr/bin/time -v where it exists, else the kernel's rusage of the child through wait4: the same
numbers). It parses the per-stage timings the CLI prints (its `time` line, and any JSON object printed
on a line of its own) and computes our labels' ARI against the truth. Output: a markdown table (stdout
and --report) and one JSON line per run (--jsonl).

Sizes are arguments, so that one call fits the time it has: lists like --embeddings 100000x384,50000x768,
--cloud 100000,1000000; a peer runs only up to --peer-max-* points; --budget S skips what would start
after S seconds (said so in the table); --timeout S kills one command after S seconds (said so).
"""
import argparse
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.normpath(os.path.join(HERE, "..", "peers"))
GEN = os.path.join(HERE, "generate.py")


def measure(cmd, timeout, log_prefix):
    """Runs cmd; returns dict(rc, wall, cpu, rss_kb, stdout, stderr, timed_out, meter)."""
    tv = shutil.which("time", path="/usr/bin")
    out_f, err_f, tv_f = log_prefix + ".out", log_prefix + ".err", log_prefix + ".time"
    full = ([tv, "-v", "-o", tv_f] if tv else []) + cmd
    t0 = time.perf_counter()
    with open(out_f, "wb") as so, open(err_f, "wb") as se:
        p = subprocess.Popen(full, stdout=so, stderr=se, start_new_session=True)
        timed_out = False
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                timed_out = True
                # kill /usr/bin/time's child first, so that time still reports its CPU time and peak RSS
                kids = []
                if tv:
                    try:
                        kids = [int(x) for x in open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()]
                    except OSError:
                        pass
                for kid in kids:
                    os.kill(kid, signal.SIGKILL)
                t_kill = time.perf_counter()
                while kids and time.perf_counter() - t_kill < 10:
                    pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                    if pid:
                        break
                    time.sleep(0.05)
                else:
                    os.killpg(p.pid, signal.SIGKILL)
                    pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.02)
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    wall = time.perf_counter() - t0
    r = {"rc": os.waitstatus_to_exitcode(status), "wall": wall, "cpu": ru.ru_utime + ru.ru_stime,
         "rss_kb": ru.ru_maxrss, "timed_out": timed_out, "meter": "rusage (wait4)",
         "stdout": open(out_f, errors="replace").read(), "stderr": open(err_f, errors="replace").read()}
    if tv and os.path.exists(tv_f):
        txt = open(tv_f, errors="replace").read()
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", txt)
        u = re.search(r"User time \(seconds\): ([\d.]+)", txt)
        s = re.search(r"System time \(seconds\): ([\d.]+)", txt)
        if m and u and s:  # the command's own figures (rusage of /usr/bin/time's child)
            r.update(rss_kb=int(m.group(1)), cpu=float(u.group(1)) + float(s.group(1)), meter="/usr/bin/time -v")
    return r


NUM = r"([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)"


def parse_stages(stdout):
    """Per-stage seconds from the CLI's summary: the `time` line, whatever stages it names
    ("time 0.081 s (prepare 0.000, iterate 0.081, group 0.000)", "time 4.9 s mean shift (0.1 s
    preparing, ...), 0.03 s regions, 5.1 s in all"), plus numbers of any JSON object line."""
    stages = {}
    for line in stdout.splitlines():
        s = line.strip()
        if s.startswith("{"):
            try:
                obj = json.loads(s)
            except ValueError:
                continue
            flat = dict(obj)
            for key in ("timing", "stages", "seconds"):
                if isinstance(obj.get(key), dict):
                    flat.update(obj[key])
            for k, v in flat.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    stages[k] = v
        elif s.startswith("time "):
            for piece in re.split(r"[(),]", s[4:]):
                piece = piece.strip()
                if not piece:
                    continue
                m = re.fullmatch(NUM + r"\s*s?\s*(.*)", piece)
                if m:
                    stages[m.group(2).strip() or "total"] = float(m.group(1))
                    continue
                m = re.fullmatch(r"(.*?)\s+" + NUM + r"\s*s?", piece)
                if m:
                    stages[m.group(1).strip()] = float(m.group(2))
    return stages


def summary_lines(stdout, keys=("backend", "method", "seeding", "search", "clusters", "segments", "iterations",
                                "regions", "bandwidth")):
    got = {}
    for line in stdout.splitlines():
        head = line.split(None, 1)
        if len(head) == 2 and head[0] in keys:
            got[head[0]] = head[1].strip()
    return got


def ari(truth_path, labels_path):
    try:
        import numpy as np
        from sklearn.metrics import adjusted_rand_score
        return round(float(adjusted_rand_score(np.load(truth_path), np.load(labels_path))), 4)
    except Exception as e:  # noqa: BLE001 (a missing file after a failed run)
        return f"n/a ({type(e).__name__})"


class Bench:
    def __init__(self, a):
        self.a = a
        self.rows = []
        self.t_start = time.perf_counter()
        self.jsonl = open(a.jsonl, "w") if a.jsonl else None

    def over_budget(self):
        return self.a.budget and time.perf_counter() - self.t_start > self.a.budget

    def record(self, row):
        self.rows.append(row)
        line = json.dumps(row)
        print(line, file=sys.stderr, flush=True)
        if self.jsonl:
            self.jsonl.write(line + "\n")
            self.jsonl.flush()

    def skip(self, workload, size, why):
        self.record({"workload": workload, "size": size, "run": "-", "note": why})

    def gen(self, args, folder):
        d = os.path.join(self.a.work, folder)
        os.makedirs(d, exist_ok=True)
        t = time.perf_counter()
        out = subprocess.run([sys.executable, GEN] + args + [d], check=True, capture_output=True, text=True)
        info = json.loads(out.stdout.strip().splitlines()[-1])
        info["seconds_generate"] = round(time.perf_counter() - t, 2)
        return d, info

    def ours(self, workload, size, sub, args, d, truth=None, labels=None, pixels=None):
        cmd = [self.a.meanshift, sub] + args + ["--quiet"] + (["--backend", self.a.backend] if self.a.backend else [])
        if sub == "cluster":
            cmd.append("--json")  # every stage and the peak memory as one JSON line (parse_stages)
        cmd += shlex.split(self.a.extra_args)
        m = measure(cmd, self.a.timeout, os.path.join(d, "ours"))
        row = {"workload": workload, "size": size, "run": "meanshift " + sub, "cmd": " ".join(map(shlex.quote, cmd)),
               "rc": m["rc"], "timed_out": m["timed_out"], "wall": round(m["wall"], 3), "cpu": round(m["cpu"], 2),
               "rss_mb": round(m["rss_kb"] / 1024, 1), "meter": m["meter"], "stages": parse_stages(m["stdout"])}
        row.update(summary_lines(m["stdout"]))
        if pixels:
            row["bytes_per_pixel"] = round(m["rss_kb"] * 1024 / pixels, 1)
        if m["timed_out"]:
            row["note"] = f"killed after {self.a.timeout:g} s"
        elif m["rc"] != 0:
            row["note"] = "failed: " + (m["stderr"].strip().splitlines() or ["?"])[-1][:300]
        elif truth and labels:
            row["ari_truth"] = ari(truth, labels)
        self.record(row)
        return row

    def peer(self, workload, size, script, args, d, pixels=None):
        cmd = [sys.executable, os.path.join(PEERS, script)] + args
        m = measure(cmd, self.a.timeout, os.path.join(d, "peer-" + script))
        row = {"workload": workload, "size": size, "run": script, "cmd": " ".join(map(shlex.quote, cmd)),
               "rc": m["rc"], "timed_out": m["timed_out"], "wall": round(m["wall"], 3), "cpu": round(m["cpu"], 2),
               "rss_mb": round(m["rss_kb"] / 1024, 1), "meter": m["meter"]}
        if pixels:
            row["bytes_per_pixel"] = round(m["rss_kb"] * 1024 / pixels, 1)
        if m["timed_out"]:
            row["note"] = f"killed after {self.a.timeout:g} s"
        elif m["rc"] != 0:
            row["note"] = "failed: " + (m["stderr"].strip().splitlines() or ["?"])[-1][:300]
        else:
            last = m["stdout"].strip().splitlines()[-1] if m["stdout"].strip() else ""
            try:
                row["peer"] = json.loads(last)
            except ValueError:
                row["peer_line"] = last  # opencv_segment.py prints one plain line
        self.record(row)
        return row

    def peer_script(self):
        return {"torch": "torch_meanshift.py", "numpy": "numpy_meanshift.py"}[self.a.peer]

    # --- workloads ------------------------------------------------------------------------------
    def embeddings(self, spec):
        n, k = (int(v) for v in spec.lower().split("x"))
        size = f"{n:,} x {k}"
        d, info = self.gen(["embeddings", "--n", str(n), "--k", str(k), "--clusters", str(self.a.clusters)],
                           f"emb-{n}x{k}")
        p, t, lab = (os.path.join(d, f) for f in ("points.npy", "truth.npy", "ours.npy"))
        h = str(info["bandwidth"])
        self.ours("embeddings", size, "cluster", [p, "--bandwidth", h, "-o", lab], d, t, lab)
        if n <= self.a.peer_max_embeddings:
            self.peer("embeddings", size, self.peer_script(), [p, "--bandwidth", h, "--truth", t, "--ours", lab], d)

    def cloud(self, n):
        size = f"{n:,} x 3, per-point H_i"
        d, info = self.gen(["cloud", "--n", str(n)], f"cloud-{n}")
        p, s, t, lab = (os.path.join(d, f) for f in ("points.npy", "sigma.npy", "truth.npy", "ours.npy"))
        self.ours("cloud", size, "cluster", [p, "--per-point-bandwidths", s, "-o", lab], d, t, lab)
        if n <= self.a.peer_max_cloud:
            self.peer("cloud", size, self.peer_script(), [p, "--sigma", s, "--truth", t, "--ours", lab], d)

    def blobs(self, n):
        size = f"{n:,} x 2, 20 blobs"
        d, info = self.gen(["blobs", "--n", str(n), "--k", "2", "--blobs", "20"], f"blobs-{n}")
        p, t, lab = (os.path.join(d, f) for f in ("points.npy", "truth.npy", "ours.npy"))
        h = str(info["bandwidth"])
        self.ours("blobs", size, "cluster", [p, "--bandwidth", h, "-o", lab], d, t, lab)
        if n <= self.a.peer_max_blobs:
            self.peer("blobs", size, self.peer_script(),
                      [p, "--bandwidth", h, "--seeds", "bins", "--truth", t, "--ours", lab], d)

    def have_cv2(self):
        try:
            import cv2  # noqa: F401
            return True
        except ImportError:
            return False

    def image(self, workload, path, d, pixels, repeat):
        size = f"{pixels / 1e6:.2f} MP"
        self.ours(workload, size, "segment", [path, "-o", os.path.join(d, os.path.basename(path) + "-seg.png")], d,
                  pixels=pixels)
        if pixels > self.a.peer_max_pixels:
            self.skip(workload, size, f"OpenCV peer skipped: over --peer-max-pixels {self.a.peer_max_pixels:g}")
        elif self.have_cv2():
            self.peer(workload, size, "opencv_segment.py", [path, "--repeat", str(repeat)], d, pixels=pixels)
        else:
            self.skip(workload, size, "OpenCV peer skipped: no cv2 in this Python")

    def photos(self):
        d, info = self.gen(["photos"] + sum((["--source", s] for s in self.a.source), []), "photos")
        for name in ("china", "flower"):
            self.image(f"photo {name}.jpg", os.path.join(d, name + ".jpg"), d, 640 * 427, 1)

    def tiled(self, mp):
        try:
            d, info = self.gen(["tiled", "--megapixels", str(mp), "--format", self.a.tiled_format] +
                               sum((["--source", s] for s in self.a.source), []), f"tiled-{mp}")
        except subprocess.CalledProcessError as e:
            self.skip(f"tiled {mp:g} MP", "-", "generator failed: " + e.stderr.strip().splitlines()[-1][:300])
            return
        self.image(f"tiled {self.a.tiled_format.upper()} from the photos", info["path"], d, info["pixels"], 1)

    def run(self):
        plan = []
        for spec in filter(None, self.a.embeddings.split(",")):
            plan.append((f"embeddings {spec}", lambda s=spec: self.embeddings(s)))
        for n in filter(None, self.a.blobs.split(",")):
            plan.append((f"blobs {n}", lambda n=int(n): self.blobs(n)))
        for n in filter(None, self.a.cloud.split(",")):
            plan.append((f"cloud {n}", lambda n=int(n): self.cloud(n)))
        if self.a.photos:
            plan.append(("photos", self.photos))
        for mp in filter(None, self.a.tiled.split(",")):
            plan.append((f"tiled {mp} MP", lambda mp=float(mp): self.tiled(mp)))
        for name, fn in plan:
            if self.over_budget():
                self.skip(name, "-", f"not run: the call's budget of {self.a.budget:g} s was spent")
                continue
            print(f"[scale_bench] {name} ({time.perf_counter() - self.t_start:.0f} s so far)", file=sys.stderr,
                  flush=True)
            try:
                fn()
            except Exception as e:  # noqa: BLE001 (one workload's failure must not lose the others)
                self.skip(name, "-", f"error: {type(e).__name__}: {str(e)[:300]}")


def fmt_stages(st):
    if not st:
        return ""
    return ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in st.items())


def ratio_note(ours, r):
    """ours' wall time against the peer's: its own clock (data loaded, no imports) and its process."""
    if not ours or ours.get("rc") != 0 or r.get("rc") != 0:
        return ""
    own = None
    if "peer" in r:
        own = r["peer"].get("seconds")
    elif "peer_line" in r:
        m = re.search(r"seconds ([\d.]+)", r["peer_line"])
        own = float(m.group(1)) if m else None
    txt = f"ours wall / peer process wall = {ours['wall'] / r['wall']:.2f}"
    if own:
        txt += f", / peer's own clock = {ours['wall'] / own:.2f}"
    return txt


def markdown(rows, header):
    out = [header, "",
           "| workload | size | run | wall s | CPU s | peak RSS MB | per-stage (as printed) | clusters / segments | ARI vs truth | notes |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    last_ours = None
    for r in rows:
        notes, ari_s, stages, clusters = [], "", "", ""
        if r["run"].startswith("meanshift"):
            last_ours = r
        elif last_ours and (last_ours["workload"], last_ours["size"]) == (r["workload"], r["size"]):
            rn = ratio_note(last_ours, r)
            if rn:
                notes.append(rn)
        if r["run"].startswith("meanshift"):
            stages = fmt_stages(r.get("stages"))
            clusters = (r.get("clusters") or r.get("segments") or "").split(" (")[0]
            ari_s = str(r.get("ari_truth", ""))
            st = r.get("stages") or {}
            if "in all" in st and "mean shift" in st:  # segment: decoding, colour conversion, writing
                notes.append(f"outside mean shift and regions: {st['in all'] - st['mean shift'] - st.get('regions', 0):.3g} s")
            elif "total" in st and r.get("rc") == 0:  # cluster: reading, writing, process start
                notes.append(f"outside the library's total: {r['wall'] - st['total']:.3g} s")
            for key in ("method", "seeding", "search", "iterations"):
                if r.get(key):
                    notes.append(f"{key}: {r[key]}")
            if r.get("backend"):
                notes.insert(0, "backend " + r["backend"].split(" (")[0])
        elif "peer" in r:
            p = r["peer"]
            stages = f"ascent {p['seconds_ascent']:.3g}, group {p['seconds_group']:.3g} (load {p['seconds_load']:.2g})"
            clusters = str(p.get("clusters", ""))
            ari_s = str(p.get("ari_truth", ""))
            notes.append(f"{p['device']}, {p['iterations']} iterations, {p['modes']:,} modes"
                         + (f" ({p['modes_moving']} still moving)" if p.get("modes_moving") else "")
                         + (f", n = {p['n']:,}" if p.get("n") else ""))
            if "ari_ours_vs_peer" in p:
                notes.append(f"ARI ours vs peer {p['ari_ours_vs_peer']}")
        elif "peer_line" in r:
            m = re.search(r"seconds ([\d.]+) segments (\d+) large (\d+)", r["peer_line"])
            if m:
                stages = f"pyrMeanShiftFiltering {m.group(1)} (best of repeats)"
                clusters = f"{m.group(2)} ({m.group(3)} >= 40 px)"
        if r.get("bytes_per_pixel"):
            notes.append(f"{r['bytes_per_pixel']} bytes/pixel")
        if r.get("note"):
            notes.append(r["note"])
        cell = lambda v: str(v).replace("|", "/")  # noqa: E731
        out.append("| " + " | ".join(cell(v) for v in (
            r["workload"], r["size"], r["run"], r.get("wall", ""), r.get("cpu", ""), r.get("rss_mb", ""), stages,
            clusters, ari_s, "; ".join(notes))) + " |")
    return "\n".join(out) + "\n"


def machine_header(a):
    lines = [f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"]
    commit = os.environ.get("MEANSHIFT_COMMIT", "")
    if not commit:
        try:
            commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True, check=True).stdout.strip()
            dirty = subprocess.run(["git", "-C", HERE, "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True).stdout.strip()
            commit += " (working tree has uncommitted changes)" if dirty else ""
        except Exception:  # noqa: BLE001 (the device's copy has no .git)
            commit = "unknown (set MEANSHIFT_COMMIT)"
    lines.append(f"- commit: {commit}")
    cpu = platform.processor()
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except Exception:  # noqa: BLE001
        pass
    lines.append(f"- CPU: {cpu}, {os.cpu_count()} logical cores available"
                 + (f", load average {os.getloadavg()[0]:.1f} at the start" if hasattr(os, "getloadavg") else ""))
    smi = shutil.which("nvidia-smi")
    if smi:
        g = subprocess.run([smi, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True).stdout.strip()
        lines.append(f"- GPU: {g or 'none reported'}")
    try:
        ver = subprocess.run([a.meanshift, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        auto = subprocess.run([a.meanshift, "backends"], capture_output=True, text=True, timeout=60).stdout
        auto = next((l for l in auto.splitlines() if l.startswith("auto")), "")
        lines.append(f"- meanshift: {a.meanshift} ({ver}); backends: {auto}; backend flag: {a.backend or 'none (auto)'}"
                     + (f"; extra args: {a.extra_args}" if a.extra_args else ""))
    except Exception as e:  # noqa: BLE001
        lines.append(f"- meanshift: {a.meanshift} ({type(e).__name__})")
    vers = []
    for mod in ("numpy", "sklearn", "torch", "cv2"):
        try:
            vers.append(f"{mod} {__import__(mod).__version__}")
        except Exception:  # noqa: BLE001
            vers.append(f"{mod} absent")
    lines.append(f"- Python {platform.python_version()}: " + ", ".join(vers) + f"; peer: {a.peer}")
    lines.append("- peak RSS: " + ("/usr/bin/time -v" if shutil.which("time", path="/usr/bin") else
                                   "rusage of the child (wait4), the figure /usr/bin/time -v prints"))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--meanshift", required=True, help="path of the meanshift binary")
    ap.add_argument("--work", required=True, help="folder for the generated data and outputs")
    ap.add_argument("--peer", choices=["torch", "numpy"], default="numpy")
    ap.add_argument("--backend", default="", help="--backend for meanshift (default: none, i.e. auto)")
    ap.add_argument("--extra-args", default="", help="more arguments for every meanshift command")
    ap.add_argument("--embeddings", default="", help="e.g. 100000x384,50000x768")
    ap.add_argument("--clusters", type=int, default=10)
    ap.add_argument("--cloud", default="", help="point counts, e.g. 100000,1000000")
    ap.add_argument("--blobs", default="", help="point counts, e.g. 10000000")
    ap.add_argument("--photos", action=argparse.BooleanOptionalAction, default=False, help="china.jpg and flower.jpg")
    ap.add_argument("--tiled", default="", help="megapixels of images tiled from the photos, e.g. 25,100")
    ap.add_argument("--tiled-format", choices=["png", "ppm"], default="png")
    ap.add_argument("--source", action="append", default=[], help="folder with china/flower .jpg or .ppm")
    ap.add_argument("--peer-max-embeddings", type=int, default=10 ** 9)
    ap.add_argument("--peer-max-cloud", type=int, default=10 ** 9)
    ap.add_argument("--peer-max-blobs", type=int, default=10 ** 9)
    ap.add_argument("--peer-max-pixels", type=float, default=1e12, help="no OpenCV peer above this image size")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per command")
    ap.add_argument("--budget", type=float, default=0, help="start nothing after this many seconds (0: no limit)")
    ap.add_argument("--report", help="write the markdown here too")
    ap.add_argument("--jsonl", help="write one JSON line per run here")
    ap.add_argument("--title", default="Scale benchmarks")
    a = ap.parse_args()
    a.meanshift = os.path.abspath(a.meanshift)
    os.makedirs(a.work, exist_ok=True)
    header = f"### {a.title}\n\n" + machine_header(a)
    print(header, file=sys.stderr, flush=True)
    b = Bench(a)
    b.run()
    md = markdown(b.rows, header)
    md += f"\nTotal {time.perf_counter() - b.t_start:.0f} s. Commands: see the JSON lines (`cmd`).\n"
    print(md, flush=True)
    if a.report:
        with open(a.report, "w") as f:
            f.write(md)


if __name__ == "__main__":
    main()
