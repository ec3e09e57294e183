#!/bin/sh
# Replays the CLI commands of the adversarial audit (12 items, found on c7c2dee) against a
# build and checks each now ends in the right answer or a clear error. Evidence, not a CTest (item 4
# and 5 take seconds and gigabytes on the old code); the regression tests are in CTest and pytest.
#   fuzz/audit_replay.sh [MEANSHIFT] [WORKDIR]      (default build-a/bin/meanshift, /tmp/audit-replay)
set -u
M=$(realpath "${1:-build-a/bin/meanshift}"); W="${2:-/tmp/audit-replay}"; R=$(realpath "$(dirname "$0")")
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 2
fails=0
ok() { echo "ok    $*"; }
bad() { echo "FAIL  $*"; fails=$((fails + 1)); }
# expect_error ITEM PATTERN CMD...: exit 1 or 2 (no signal) and PATTERN in the message
expect_error() {
  item="$1"; pat="$2"; shift 2
  "$@" > out.log 2> err.log; rc=$?
  if [ $rc -ge 1 ] && [ $rc -le 2 ] && grep -q -- "$pat" err.log; then ok "$item: $(head -c 150 err.log)"
  else bad "$item: exit $rc, expected an error naming '$pat': $(head -c 300 err.log)"; fi
}
clusters() { sed -n 's/^clusters *\([0-9]*\).*/\1/p' out.log; }
npy() {  # npy FILE DESCR ROWS COLS VALUE: a float NPY filled with VALUE
  python3 - "$@" <<'PY'
import struct, sys
f, descr, rows, cols, v = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
head = "{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }" % (descr, rows, cols)
head += " " * (63 - (10 + len(head)) % 64) + "\n"
with open(f, "wb") as o:
    o.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
    o.write(struct.pack("<d" if descr == "<f8" else "<f", v) * (rows * cols))
PY
}
awk 'BEGIN { srand(7); for (i = 0; i < 300; i++) { c = i % 3; printf "%.5f,%.5f\n", c * 8 + rand(), c * 3 + rand() } }' > good.csv
awk 'BEGIN { srand(8); for (i = 0; i < 300; i++) { c = i % 2; printf "%.5f,%.5f\n", c * 9 + rand(), rand() } }' > other.csv

# 1. wide inputs (segfault in float_column_range)
npy w.npy '<f8' 1 1500000 1
"$M" cluster w.npy --bandwidth 1 -o o.npy > out.log 2> err.log; rc=$?
[ $rc -le 1 ] && ok "1: 1 x 1,500,000 NPY: exit $rc" || bad "1: 1 x 1,500,000 NPY: exit $rc"
awk 'BEGIN { for (i = 1; i < 2000000; i++) printf "1,"; print "1" }' > w.csv
"$M" cluster w.csv --bandwidth 1 -o o.csv > out.log 2> err.log; rc=$?
[ $rc -le 1 ] && ok "1: CSV row of 2,000,000 fields: exit $rc" || bad "1: CSV row of 2,000,000 fields: exit $rc"
# 2. thread counts no machine starts
expect_error "2: --threads 100000" "threads = 100000 exceeds the limit" "$M" cluster good.csv --bandwidth 1 -o o.csv --threads 100000
expect_error "2: --ppus 1000000" "ppus) = 1000000 exceeds the limit" "$M" cluster good.csv --bandwidth 1 -o o.csv --ppus 1000000
# 3. bin keys: tiny bandwidths and a 1e19 coordinate give exact's clusters
"$M" cluster good.csv --bandwidth 1e-20 -o o.csv > out.log 2>&1
[ "$(clusters)" = 300 ] && ok "3: --bandwidth 1e-20: 300 clusters" || bad "3: --bandwidth 1e-20: $(clusters) clusters"
printf '1e19,1\n0,1\n5,5\n' > big.csv
"$M" cluster big.csv --bandwidth 1 -o o.csv > out.log 2>&1
[ "$(clusters)" = 3 ] && ok "3: [[1e19,1],[0,1],[5,5]]: 3 clusters" || bad "3: [[1e19,1],[0,1],[5,5]]: $(clusters) clusters"
# 4. a PNG declaring 10,000 x 10,000 pixels: refused before decoding
python3 - <<'PY'
import struct, zlib
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
raw = zlib.compress(b"\0" * (10001 * 10000), 9)
open("bomb.png", "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 10000, 10000, 8, 0, 0, 0, 0))
                             + chunk(b"IDAT", raw) + chunk(b"IEND", b""))
PY
expect_error "4: 10,000 x 10,000 PNG bomb ($(wc -c < bomb.png) bytes)" "pixels" timeout 60 "$M" segment bomb.png -o s.png
# 5. memory linear in k: 10 x 20,000 NPY (was 8.5 GB)
npy wide.npy '<f8' 10 20000 0.5
/usr/bin/time -f "%M" -o rss.txt "$M" cluster wide.npy --bandwidth 1 -o o.csv > out.log 2>&1; rc=$?
kb=$(tail -n 1 rss.txt)
[ $rc -eq 0 ] && [ "$kb" -lt 1000000 ] && ok "5: 10 x 20,000: peak $((kb / 1024)) MB" || bad "5: 10 x 20,000: exit $rc, peak $kb kB"
# 6. out of memory that names the option
expect_error "6: --adaptive-window 100000" "adaptive-window" "$M" segment "$R/corpus/image/grad-8x8.jpg" -o s.png --adaptive --adaptive-window 100000
expect_error "6: bench --n 1e11" "\-\-n" "$M" bench --n 100000000000
# 7. a NUL byte in a CSV field
printf '1,2\n3\0abc,4\n5,6\n' > n.csv
expect_error "7: NUL in a CSV field" "NUL byte" "$M" cluster n.csv --bandwidth 1 -o o.csv
# 8. two concurrent runs writing the same outputs: one run's set, never mixed (20 trials)
"$M" cluster good.csv --bandwidth 1 -o a.csv --modes am.csv -q > /dev/null && "$M" cluster other.csv --bandwidth 1 -o b.csv --modes bm.csv -q > /dev/null
mixed=0
for t in $(seq 20); do
  "$M" cluster good.csv --bandwidth 1 -o c.csv --modes cm.csv -q > /dev/null 2>&1 & p1=$!
  "$M" cluster other.csv --bandwidth 1 -o c.csv --modes cm.csv -q > /dev/null 2>&1 & p2=$!
  wait $p1; r1=$?; wait $p2; r2=$?
  if cmp -s c.csv a.csv; then cmp -s cm.csv am.csv && cmp -s c.centres.csv a.centres.csv || mixed=$((mixed + 1))
  elif cmp -s c.csv b.csv; then cmp -s cm.csv bm.csv && cmp -s c.centres.csv b.centres.csv || mixed=$((mixed + 1))
  else mixed=$((mixed + 1)); fi
  [ $r1 -eq 0 ] || [ $r2 -eq 0 ] || mixed=$((mixed + 1))
done
[ $mixed -eq 0 ] && ok "8: 20 x two concurrent runs: every set from one run" || bad "8: $mixed of 20 trials mixed or failed"
# 9. image errors and an unknown subcommand
expect_error "9: PNG cut inside IEND" "truncated" "$M" segment "$R/regressions/image/cut-inside-iend.png" -o s.png
expect_error "9: PNG header 0 x 0" "0 x 0 pixels" "$M" segment "$R/regressions/image/zero-0x0.png" -o s.png
expect_error "9: PNG header 0 x 5" "zero width or height" "$M" segment "$R/regressions/image/zero-0x5.png" -o s.png
expect_error "9: truncated zlib" "truncated\|corrupt\|ends" "$M" segment "$R/regressions/image/truncated-zlib.png" -o s.png
expect_error "9: meanshift frobnicate" "frobnicate" "$M" frobnicate
# 10. stdout that cannot be written: exit 1 and no outputs
rm -f o.csv o.centres.csv
"$M" cluster good.csv --bandwidth 1 -o o.csv > /dev/full 2> err.log; rc=$?
[ $rc -eq 1 ] && [ ! -e o.csv ] && [ ! -e o.centres.csv ] && ok "10: > /dev/full: exit 1, no outputs" || bad "10: > /dev/full: exit $rc, outputs: $(ls o.* 2>/dev/null)"
if command -v mpirun > /dev/null && ldd "$M" | grep -q libmpi; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none timeout 60 \
    mpirun --oversubscribe -np 2 sh -c 'exec "$@" > /dev/full' sh "$M" cluster good.csv --bandwidth 1 -o o.csv --threads 1 > /dev/null 2>&1; rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ ! -e o.csv ] && ok "10: mpirun -np 2, rank 0's stdout /dev/full: exit $rc, no outputs" \
    || bad "10: mpirun -np 2, rank 0's stdout /dev/full: exit $rc, outputs: $(ls o.* 2>/dev/null)"
fi
# 11. lax NPY headers
for f in extra-key-import duplicate-shape trailing-junk unclosed-dict shape-not-a-tuple; do
  expect_error "11: $f.npy" "$f.npy" "$M" cluster "$R/regressions/npy/$f.npy" --bandwidth 1 -o o.csv
done
# 12. conflicting options, docs against --help, symlinked outputs
expect_error "12: --exact --cutoff 2" "excludes" "$M" cluster good.csv --bandwidth 1 -o o.csv --exact --cutoff 2
expect_error "12: -b openmp --device abc" "device" "$M" cluster good.csv --bandwidth 1 -o o.csv -b openmp --device abc
expect_error "12: --devices 0,-1" "devices" "$M" cluster good.csv --bandwidth 1 -o o.csv --devices 0,-1
h=$("$M" segment --help)
echo "$h" | grep -q -- "--max-iter INT.*=5" && echo "$h" | grep -q -- "--tol FLOAT.*=0.3" && grep -q '`--max-iter N` | 100 (segment: 5)' "$R/../docs/cli.md" \
  && ok "12: segment --max-iter 5, --tol 0.3 in --help and docs/cli.md" || bad "12: segment defaults differ between --help and docs/cli.md"
mkdir -p real && ln -sf real/later.csv link.csv
"$M" cluster good.csv --bandwidth 1 -o link.csv > out.log 2> err.log; rc=$?
[ $rc -eq 0 ] && [ -L link.csv ] && [ -f real/later.csv ] && ok "12: -o symlink to a not-yet-existing file: followed" \
  || bad "12: -o symlink to a not-yet-existing file: exit $rc $(head -c 200 err.log)"
echo "audit replay: $fails failed"
[ $fails -eq 0 ]
