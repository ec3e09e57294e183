#!/usr/bin/env python3
"""`meanshift segment` on a set of photos beside the OpenCV script, interleaved in one call.

    bench_segment_photos.py MEANSHIFT_BIN IMAGE... [--repeat 5] [--python PY] [--json OUT]
        [-- extra `meanshift segment` options]

For each image, --repeat rounds of: our whole process (`MEANSHIFT_BIN segment IMAGE -o OUT.png
--json`, default options, wall clock around the process) then the peer
(apps/bench/peers/opencv_segment.py --repeat 1: imread + pyrMeanShiftFiltering(img, 8, 8) +
imwrite on one thread, timed inside Python, and its process wall). Alternating the two puts the
same machine load on both. Prints per image the best of the rounds (and the median in the JSON):
our wall, our stages (the CLI's --json line), the peer's filtering, pipeline and process, and
ours / peer for the pipeline (the goal's ratio: the whole CLI against imread + filter + imwrite)
and for the process. Needs opencv-python(-headless) or Debian's python3-opencv, and scipy, in PY.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_ours(binary, image, out, extra):
    t0 = time.perf_counter()
    p = subprocess.run([binary, "segment", image, "-o", out, "--json", "--quiet"] + extra,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"meanshift failed on {image}: {p.stderr.strip()[:500]}")
    js = json.loads(p.stdout.strip().splitlines()[-1])
    return wall, js


def run_peer(python, image):
    t0 = time.perf_counter()
    p = subprocess.run([python, os.path.join(HERE, "peers", "opencv_segment.py"), image, "--repeat", "1"],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"opencv_segment.py failed on {image}: {p.stderr.strip()[:500]}")
    m = re.search(r"seconds ([\d.]+) segments (\d+) large (\d+) pipeline ([\d.]+)", p.stdout)
    return wall, float(m.group(1)), float(m.group(4))


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("images", nargs="+")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--json", default="", help="write every round's figures here")
    a = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="bench-segment-photos-")
    rows = []
    print(f"machine: {os.cpu_count()} cores; load before: {open('/proc/loadavg').read().split()[:3]}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{'image':24s} {'MP':>5s} {'ours s':>7s} {'cv pipe':>7s} {'cv proc':>7s} {'cv filt':>7s} "
          f"{'/pipe':>6s} {'/proc':>6s} {'segs':>6s}  our stages (best round)")
    for image in a.images:
        ours, peer = [], []
        for _ in range(a.repeat):
            ours.append(run_ours(a.binary, image, os.path.join(work, "out.png"), extra))
            peer.append(run_peer(a.python, image))
        best = min(ours, key=lambda r: r[0])
        js = best[1]
        o_wall = best[0]
        p_proc = min(p[0] for p in peer)
        p_filt = min(p[1] for p in peer)
        p_pipe = min(p[2] for p in peer)
        st = js.get("stages", {})
        top = sorted(((v, k) for k, v in st.items() if v >= 0.002), reverse=True)[:7]
        stages = ", ".join(f"{k} {v:.3f}" for v, k in top)
        mp = js["pixels"] / 1e6
        print(f"{os.path.basename(image):24s} {mp:5.2f} {o_wall:7.3f} {p_pipe:7.3f} {p_proc:7.3f} {p_filt:7.3f} "
              f"{o_wall / p_pipe:6.2f} {o_wall / p_proc:6.2f} {js['segments']:6d}  {stages}", flush=True)
        rows.append({"image": image, "pixels": js["pixels"], "segments": js["segments"],
                     "ours_wall": [r[0] for r in ours], "ours_stages_best": st,
                     "peer_process": [p[0] for p in peer], "peer_filter": [p[1] for p in peer],
                     "peer_pipeline": [p[2] for p in peer],
                     "ratio_pipeline_best": o_wall / p_pipe,
                     "ratio_pipeline_median": statistics.median(r[0] for r in ours) /
                     statistics.median(p[2] for p in peer)})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("ours: whole process wall; cv pipe: imread + filter + imwrite inside Python; cv proc: the script's "
          "process (Python and cv2 start included); /pipe, /proc: ours over each; best of "
          f"{a.repeat} alternating rounds")


if __name__ == "__main__":
    main()
