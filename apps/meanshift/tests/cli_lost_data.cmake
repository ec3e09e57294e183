# "Lost data" cases of issue 9, each reproduced against the `meanshift` tool and asserted: the exit
# status, the message (one line, naming the files), every input byte-for-byte unchanged (SHA-256
# before and after), no output file created or changed when the run fails, and no temporary file
# left behind. Variables: MEANSHIFT_EXE, WORK (scratch folder), DATA (apps/meanshift/tests/data).
cmake_minimum_required(VERSION 3.22)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(failures 0)
string(ASCII 27 esc)
find_program(BASH bash)

macro(fail what)
  message("FAIL ${what}")
  math(EXPR failures "${failures} + 1")
endmacro()

# run(<status> <stderr regex or ""> <stdout regex or ""> args...): status is a number, or "nonzero".
# Sets last_err / last_out / last_seconds for further checks.
function(run status err_pattern out_pattern)
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK} TIMEOUT 60
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(TIMESTAMP t1 "%s")
  math(EXPR secs "${t1} - ${t0}")
  string(REPLACE ";" " " cmd "${ARGN}")
  string(REPLACE "${MEANSHIFT_EXE}" "meanshift" cmd "${cmd}")
  string(STRIP "${err}" e)
  set(bad "")
  if(NOT rc MATCHES "^[0-9]+$")
    set(bad "no exit status ('${rc}': crash or timeout)")
  elseif(status STREQUAL "nonzero" AND rc EQUAL 0)
    set(bad "exit status 0, want non-zero")
  elseif(NOT status STREQUAL "nonzero" AND NOT rc EQUAL status)
    set(bad "exit status ${rc}, want ${status}")
  elseif(NOT rc EQUAL 0 AND NOT e MATCHES "^meanshift: error: ")
    set(bad "stderr does not start with 'meanshift: error: '")
  elseif(NOT rc EQUAL 0 AND e MATCHES "\n")
    set(bad "stderr has more than one line")
  elseif(NOT err_pattern STREQUAL "" AND NOT e MATCHES "${err_pattern}")
    set(bad "stderr does not match '${err_pattern}'")
  elseif(NOT out_pattern STREQUAL "" AND NOT out MATCHES "${out_pattern}")
    set(bad "stdout does not match '${out_pattern}'")
  endif()
  if(bad)
    message("FAIL ${cmd}: ${bad}\n  stdout: ${out}\n  stderr: ${err}")
    math(EXPR n "${failures} + 1")
    set(failures ${n} PARENT_SCOPE)
  else()
    message("ok   ${cmd}")
  endif()
  set(last_err "${err}" PARENT_SCOPE)
  set(last_out "${out}" PARENT_SCOPE)
  set(last_seconds ${secs} PARENT_SCOPE)
endfunction()

# hashes(<var> files...): "name=sha256;..." of the files (or name=missing).
function(hashes var)
  set(list "")
  foreach(f ${ARGN})
    if(EXISTS ${WORK}/${f})
      file(SHA256 ${WORK}/${f} h)
    else()
      set(h missing)
    endif()
    list(APPEND list "${f}=${h}")
  endforeach()
  set(${var} "${list}" PARENT_SCOPE)
endfunction()

macro(expect_unchanged before what)
  set(_files "")
  foreach(entry ${${before}})
    string(REGEX REPLACE "=.*" "" name "${entry}")
    list(APPEND _files ${name})
  endforeach()
  hashes(_after ${_files})
  if(NOT "${_after}" STREQUAL "${${before}}")
    fail("${what}: files changed: before ${${before}}, after ${_after}")
  endif()
endmacro()

macro(expect_missing what)
  foreach(f ${ARGN})
    if(EXISTS ${WORK}/${f} OR IS_SYMLINK ${WORK}/${f})
      fail("${what}: ${f} exists (partial output)")
      file(REMOVE ${WORK}/${f})
    endif()
  endforeach()
endmacro()

macro(expect_no_temporaries what)
  file(GLOB_RECURSE _temps LIST_DIRECTORIES false ${WORK}/.*.tmp-*)
  if(_temps)
    fail("${what}: temporary files left: ${_temps}")
    file(REMOVE ${_temps})
  endif()
endmacro()

# --- data --------------------------------------------------------------------------------------
set(csv "x,y\n")
set(ones "")
foreach(c 0 10 20)
  foreach(d 1 2 3)
    foreach(e 1 2 3)
      string(APPEND csv "${c}.${d},0.${e}\n")
      string(APPEND ones "1,1\n")
    endforeach()
  endforeach()
endforeach()
file(WRITE ${WORK}/in.csv "${csv}")
file(WRITE ${WORK}/h.csv "${ones}")
file(WRITE ${WORK}/x.centres.csv "${csv}")
# 240 points: labels (~480 bytes) fit under a 1 KiB file size limit, modes (~4 KB) do not.
set(big "")
foreach(i RANGE 1 240)
  math(EXPR g "${i} % 3 * 10")
  math(EXPR f "${i} % 7")
  string(APPEND big "${g}.${f}1234567,${f}.7654321\n")
endforeach()
file(WRITE ${WORK}/big.csv "${big}")

# 64 x 32 binary PPM of printable bytes: dark left half '(' = 40, light right half 'x' = 120.
set(row "")
foreach(i RANGE 1 32)
  string(APPEND row "(((")
endforeach()
foreach(i RANGE 1 32)
  string(APPEND row "xxx")
endforeach()
set(ppm "P6\n64 32\n255\n")
foreach(i RANGE 1 32)
  string(APPEND ppm "${row}")
endforeach()
file(WRITE ${WORK}/img.ppm "${ppm}")
set(ms ${MEANSHIFT_EXE})
set(fast --backend serial --quiet)

# --- 1. an output that is an input is refused before any work, naming both --------------------
hashes(before in.csv h.csv x.centres.csv)
run(1 "refusing to write in.csv \\(-o\\): it is the input in.csv" "" ${ms} cluster in.csv --bandwidth 1 -o in.csv)
expect_unchanged(before "-o equal to the input")
expect_missing("-o equal to the input" in.centres.csv)

run(1 "refusing to write in.csv \\(--modes\\): it is the input in.csv" "" ${ms} cluster in.csv --bandwidth 1 -o l1.csv --modes in.csv)
expect_unchanged(before "--modes equal to the input")
expect_missing("--modes equal to the input" l1.csv l1.centres.csv)

run(1 "refusing to write h.csv \\(-o\\): it is the --per-point-bandwidths file h.csv" ""
    ${ms} cluster in.csv --per-point-bandwidths h.csv -o h.csv)
expect_unchanged(before "--per-point-bandwidths equal to -o")
expect_missing("--per-point-bandwidths equal to -o" h.centres.csv)

run(1 "refusing to write x.centres.csv \\(the centres file named after -o x.csv\\): it is the input x.centres.csv"
    "" ${ms} cluster x.centres.csv --bandwidth 1 -o x.csv)
expect_unchanged(before "input named like the centres file")
expect_missing("input named like the centres file" x.csv)

# The same file under another name: a symbolic link, a hard link, a path through '..'.
file(MAKE_DIRECTORY ${WORK}/sub)
file(CREATE_LINK in.csv ${WORK}/link.csv SYMBOLIC)
file(CREATE_LINK ${WORK}/in.csv ${WORK}/hard.csv)
run(1 "refusing to write link.csv \\(-o\\): it is the input in.csv \\(the same file\\)" "" ${ms} cluster in.csv --bandwidth 1 -o link.csv)
run(1 "refusing to write hard.csv \\(-o\\): it is the input in.csv \\(the same file\\)" "" ${ms} cluster in.csv --bandwidth 1 -o hard.csv)
run(1 "refusing to write sub/../in.csv \\(-o\\): it is the input in.csv" "" ${ms} cluster in.csv --bandwidth 1 -o sub/../in.csv)
run(1 "refusing to write ${WORK}/in.csv \\(--modes\\)" "" ${ms} cluster link.csv --bandwidth 1 -o l2.csv --modes ${WORK}/in.csv)
expect_unchanged(before "outputs that are the input under another name")
expect_missing("outputs that are the input under another name" l2.csv l2.centres.csv)
if(NOT IS_SYMLINK ${WORK}/link.csv)
  fail("the symbolic link link.csv was replaced")
endif()

# Two outputs that are one file.
run(1 "o.csv \\(--modes\\) and o.csv \\(-o\\) are the same file" "" ${ms} cluster in.csv --bandwidth 1 -o o.csv --modes o.csv)
run(1 "sub/../o.centres.csv \\(--modes\\) and o.centres.csv \\(the centres file" "" ${ms} cluster in.csv --bandwidth 1 -o o.csv --modes sub/../o.centres.csv)
expect_missing("two outputs that are one file" o.csv o.centres.csv)

# --- 2. a second output that cannot be written leaves no first output behind -------------------
file(MAKE_DIRECTORY ${WORK}/d.centres.csv)
run(1 "d.centres.csv \\(the centres file named after -o d.csv\\): is a folder, not a file" "" ${ms} cluster in.csv --bandwidth 1 -o d.csv)
expect_missing("centres path is a folder" d.csv)
run(1 "no/such/m.csv \\(--modes\\): folder no/such does not exist" "" ${ms} cluster in.csv --bandwidth 1 -o e.csv --modes no/such/m.csv)
expect_missing("--modes in a missing folder" e.csv e.centres.csv)
file(CREATE_LINK /dev/null ${WORK}/null.csv SYMBOLIC)
run(1 "null.csv \\(--modes\\): exists and is not a regular file" "" ${ms} cluster in.csv --bandwidth 1 -o e.csv --modes null.csv)
expect_missing("--modes is a device" e.csv e.centres.csv)

if(BASH)
  # A write that fails half-way (file size limit of 1 KiB: the modes do not fit). Outputs that
  # existed before keep their old contents; new ones are not created.
  file(WRITE ${WORK}/lab.csv "old labels\n")
  hashes(before_outputs lab.csv lab.centres.csv modes.csv big.csv)
  run(1 "modes.csv: cannot write \\(File too large\\); no output file was created or changed" ""
      ${BASH} -c "ulimit -f 1 && exec \"$0\" \"$@\"" ${ms} cluster big.csv --bandwidth 1 ${fast} -o lab.csv --modes modes.csv)
  expect_unchanged(before_outputs "write failure in the third output")
  expect_no_temporaries("write failure in the third output")
  # The same run without the limit writes all three.
  run(0 "" "modes   ->  modes.csv" ${ms} cluster big.csv --bandwidth 1 ${fast} -o lab.csv --modes modes.csv)
  file(STRINGS ${WORK}/lab.csv labels)
  list(LENGTH labels nl)
  if(NOT nl EQUAL 240)
    fail("lab.csv has ${nl} lines, want 240")
  endif()
  file(REMOVE ${WORK}/lab.csv ${WORK}/lab.centres.csv ${WORK}/modes.csv)
else()
  message("skip write-failure cases (no bash for ulimit -f)")
endif()

# --- 3. segment: every write checked, all outputs or none ---------------------------------------
hashes(img_before img.ppm)
run(1 "no/such/seg.png \\(-o\\): folder no/such does not exist" "" ${ms} segment img.ppm ${fast} -o no/such/seg.png)
run(1 "img.ppm.png: cannot open for reading \\(No such file or directory\\)" "" ${ms} segment img.ppm.png -o img.ppm.png)
expect_missing("missing input named like the output" img.ppm.png img.ppm-labels.png)
run(0 "" "segments +[0-9]+\n" ${ms} segment img.ppm --hs 3 --hr 5 ${fast} -o seg.png --labels ids.csv --all-outputs)
# seg-labels.png now exists: use it as an input whose name is the derived label image of -o seg.png.
hashes(seg_before seg-labels.png seg.png ids.csv)
run(1 "refusing to write seg-labels.png \\(the label image named after -o seg.png\\): it is the input image seg-labels.png"
    "" ${ms} segment seg-labels.png ${fast} -o seg.png --all-outputs)
run(1 "refusing to write seg.png \\(-o\\): it is the input image seg.png" "" ${ms} segment seg.png ${fast} -o seg.png)
file(COPY ${WORK}/img.ppm DESTINATION ${WORK}/sub)
file(RENAME ${WORK}/sub/img.ppm ${WORK}/sub/img.csv)  # an image named like a matrix file
run(1 "refusing to write sub/img.csv \\(--labels\\): it is the input image sub/img.csv" "" ${ms} segment sub/img.csv ${fast} -o s2.png --labels sub/img.csv)
expect_unchanged(seg_before "segment refusals")
expect_unchanged(img_before "segment refusals")
expect_missing("segment refusals" s2.png s2-labels.png)
file(MAKE_DIRECTORY ${WORK}/t-labels.png)
run(1 "t-labels.png \\(the label image named after -o t.png\\): is a folder" "" ${ms} segment img.ppm ${fast} -o t.png --all-outputs)
expect_missing("segment label image is a folder" t.png)
if(BASH)
  # The label ids (64 x 32 values, 4 KB as CSV) exceed a 1 KiB file size limit; the PNGs do not.
  run(1 "u(-ids\\.csv|-labels\\.png|\\.png): cannot write \\(File too large\\); no output file was created or changed" ""
      ${BASH} -c "ulimit -f 1 && exec \"$0\" \"$@\"" ${ms} segment img.ppm --hs 3 --hr 5 ${fast} -o u.png --labels u-ids.csv --all-outputs)
  expect_missing("segment with an unwritable output" u.png u-labels.png u-ids.csv)
  expect_no_temporaries("segment with an unwritable output")
endif()

# --- 4. images whose header claims more pixels than the file holds -----------------------------
foreach(f lying-26000.ppm lying-26000.bmp)
  file(COPY ${DATA}/${f} DESTINATION ${WORK})
  hashes(lie_before ${f})
  run(1 "${f}: the header declares 26000 x 26000 pixels, .* but the file has only" "" ${ms} segment ${f} ${fast} -o lie.png)
  if(last_seconds GREATER 5)
    fail("${f} took ${last_seconds} s to reject")
  endif()
  expect_unchanged(lie_before "lying image")
  expect_missing("lying image" lie.png lie-labels.png)
endforeach()
run(1 "img.ppm: the image is 64 x 32 = 2048 pixels, more than the limit of 1000 \\(raise it with --max-image-pixels N\\)"
    "" ${ms} segment img.ppm --max-image-pixels 1000 -o lim.png)
file(WRITE ${WORK}/zero.ppm "P6\n0 8\n255\n")
run(1 "zero.ppm: the image is 0 x 8 pixels \\(zero width or height\\)" "" ${ms} segment zero.ppm -o z.png)
run(1 "in.csv: cannot read image \\([^)]+\\)" "" ${ms} segment in.csv -o z.png)
file(WRITE ${WORK}/empty.png "")
run(1 "empty.png: empty file, not an image" "" ${ms} segment empty.png -o z.png)
expect_missing("bad images" lim.png z.png z-labels.png)

# --- 5. input bytes are escaped before they reach the terminal ---------------------------------
file(WRITE ${WORK}/esc.csv "1,2\n3,${esc}[31mred${esc}[0m\n")
run(1 "esc.csv: line 2, column 2: '\\\\x1b\\[31mred\\\\x1b\\[0m' is not a number" "" ${ms} cluster esc.csv --bandwidth 1 -o e.csv)
string(FIND "${last_err}" "${esc}" at)
if(NOT at EQUAL -1)
  fail("an ESC byte reached stderr")
endif()
# (no '[' in arguments: CMake does not split lists inside brackets)
file(WRITE ${WORK}/name${esc}cx.csv "1,2\n3,bad\n")
run(1 "name\\\\x1bcx.csv: line 2, column 2" "" ${ms} cluster "name${esc}cx.csv" --bandwidth 1 -o e.csv)
string(FIND "${last_err}" "${esc}" at)
if(NOT at EQUAL -1)
  fail("an ESC byte from a file name reached stderr")
endif()
string(ASCII 7 bel)
run(0 "" "labels  ->  out\\\\x07.csv" ${ms} cluster in.csv --bandwidth 1 ${fast} -o "out${bel}.csv")
string(FIND "${last_out}" "${bel}" at)
if(NOT at EQUAL -1)
  fail("a BEL byte from a file name reached stdout")
endif()
# A PNG chunk type made of ESC [ 2 J: the reason quotes it (as stb_image did), escaped.
file(COPY ${DATA}/esc-chunk.png DESTINATION ${WORK})
run(1 "esc-chunk.png: cannot read image \\(\\\\x1b\\[2J PNG chunk not known\\)" "" ${ms} segment esc-chunk.png -o e.png)
string(FIND "${last_err}" "${esc}" at)
if(NOT at EQUAL -1)
  fail("an ESC byte from a PNG chunk type reached stderr")
endif()
run(2 "--bandwidth: '\\\\x1bc' is not a number" "" ${ms} cluster in.csv --bandwidth "${esc}c" -o e.csv)
file(WRITE ${WORK}/huge.csv "1,2\n3,1e300\n")
run(1 "huge.csv: row 2, column 2: value 1e\\+300 does not fit in float32 \\(\\|x\\| <= 3.4e\\+38\\)" "" ${ms} cluster huge.csv --bandwidth 1 -o e.csv)
expect_missing("escaped messages" e.csv e.centres.csv)

# --- 6. stdout that cannot be written is an error too ------------------------------------------
if(EXISTS /dev/full)
  execute_process(COMMAND ${ms} backends OUTPUT_FILE /dev/full ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 1 OR NOT err MATCHES "cannot write to standard output \\(No space left on device\\)")
    fail("meanshift backends > /dev/full: exit ${rc}, stderr ${err}")
  else()
    message("ok   meanshift backends > /dev/full")
  endif()
endif()

# A summary that cannot be written leaves no outputs, so that exit status 1 keeps its meaning
# (audit 26, item 10: o.csv and o.centres.csv were created, then the tool exited 1).
if(EXISTS /dev/full)
  execute_process(COMMAND ${ms} cluster in.csv --bandwidth 1 ${fast} -o full.csv --modes full-modes.csv
                  WORKING_DIRECTORY ${WORK} OUTPUT_FILE /dev/full ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 1 OR NOT err MATCHES "^meanshift: error: cannot write to standard output \\(No space left on device\\); no output file was created or changed\n$")
    fail("meanshift cluster ... > /dev/full: exit ${rc}, stderr ${err}")
  else()
    message("ok   meanshift cluster ... > /dev/full")
  endif()
  expect_missing("summary to /dev/full" full.csv full.centres.csv full-modes.csv)
  expect_no_temporaries("summary to /dev/full")
endif()

# --- 7. an output that is a symbolic link to a file that does not exist yet is written there ---
file(CREATE_LINK new-target.csv ${WORK}/dangling.csv SYMBOLIC)
run(0 "" "labels  ->  dangling.csv" ${ms} cluster in.csv --bandwidth 1 ${fast} -o dangling.csv)
if(NOT IS_SYMLINK ${WORK}/dangling.csv OR NOT EXISTS ${WORK}/new-target.csv)
  fail("the dangling link dangling.csv was not followed to new-target.csv")
else()
  file(STRINGS ${WORK}/new-target.csv labels)
  list(LENGTH labels nl)
  if(NOT nl EQUAL 27)
    fail("new-target.csv has ${nl} labels, want 27")
  endif()
endif()

# --- 8. concurrent runs writing the same outputs publish whole sets (audit 26, item 8) ----------
# Two runs on different data (27 and 240 points) write -o, the centres and --modes at once; each
# time, the labels and the modes must come from the same run (the same number of lines), both
# runs exit 0, and no temporary is left.
if(BASH)
  foreach(trial RANGE 1 6)
    execute_process(COMMAND ${BASH} -c
      "\"$0\" cluster in.csv --bandwidth 1 --backend serial -q -o same.csv --modes same-modes.csv >/dev/null & a=$!; \"$0\" cluster big.csv --bandwidth 1 --backend serial -q -o same.csv --modes same-modes.csv >/dev/null & b=$!; wait $a; ra=$?; wait $b; rb=$?; exit $((ra + rb))"
      ${ms} WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc ERROR_VARIABLE err)
    file(STRINGS ${WORK}/same.csv labels)
    file(STRINGS ${WORK}/same-modes.csv modes)
    list(LENGTH labels nl)
    list(LENGTH modes nm)
    if(NOT rc EQUAL 0 OR NOT nl EQUAL nm)
      fail("concurrent runs, trial ${trial}: exit ${rc}, ${nl} labels but ${nm} modes (a mixed set) ${err}")
    endif()
  endforeach()
  expect_no_temporaries("concurrent runs")
  message("ok   concurrent runs publish whole sets")
endif()

# --- 9. an image whose decoding and segmentation would not fit in memory is refused from its
# header (audit 26, item 4): 10,000 x 10,000 pixels declared by a 12 KB PNG whose data are garbage,
# so reaching the decoder would give a different message.
file(COPY ${DATA}/bomb-10000x10000.png DESTINATION ${WORK})
run(1 "bomb-10000x10000.png: the image is 10000 x 10000 pixels; segmenting it needs about 41 GB \\(12 bytes per pixel decoded, 400 per pixel segmented\\), more than the --max-memory budget of 1.0 GB; it cannot be decoded within that budget"
    "" ${ms} segment bomb-10000x10000.png --max-memory 1000 -o bomb.png)
run(1 "bomb-10000x10000.png: the image is 10000 x 10000 pixels; segmenting it needs about 3.2 GB \\(12 bytes per pixel decoded, 400 per pixel of the 2236 x 2236 segmented \\(--max-pixels\\)\\), more than the --max-memory budget of 1.0 GB"
    "" ${ms} segment bomb-10000x10000.png --max-memory 1000 --max-pixels 5000000 -o bomb.png)
run(1 "bomb-10000x10000.png: cannot read image \\(" "" ${ms} segment bomb-10000x10000.png --max-memory 0 --max-pixels 1000 -o bomb.png)
expect_missing("image bomb" bomb.png bomb-labels.png)

# Clear image errors (audit 26, item 9).
foreach(f zero-0x0.png zero-0x5.png cut-inside-iend.png truncated-zlib.png nul.csv)
  file(COPY ${DATA}/${f} DESTINATION ${WORK})
endforeach()
run(1 "zero-0x0.png: the image is 0 x 0 pixels \\(zero width or height\\)" "" ${ms} segment zero-0x0.png -o z.png)
run(1 "zero-0x5.png: the image is 0 x 5 pixels \\(zero width or height\\)" "" ${ms} segment zero-0x5.png -o z.png)
run(1 "cut-inside-iend.png: the PNG file ends at byte 93 inside a chunk header, before its IEND chunk: truncated file"
    "" ${ms} segment cut-inside-iend.png -o z.png)
run(1 "truncated-zlib.png: cannot read image \\([A-Za-z ]+: the image data after the header are truncated or corrupt\\)"
    "" ${ms} segment truncated-zlib.png -o z.png)
# A NUL byte inside a CSV field (audit 26, item 7: "3\0abc" was read as 3).
run(1 "nul.csv: line 2, column 1: the field has a NUL byte \\(its byte 2; a binary file, or text in UTF-16\\?\\)"
    "" ${ms} cluster nul.csv --bandwidth 1 -o z.csv)
expect_missing("bad inputs" z.png z-labels.png z.csv z.centres.csv)

expect_no_temporaries("end")
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} check(s) failed")
endif()
