#!/usr/bin/env bash
# session 21 job 3 (2x H200): GPU tests of LAMB and Adam (tapered chunks under roles); run again as job 4 with
# ONLY="adam@split5 adam@split16 adam@chunks5 lamb@chunks3 lamb@split3 lamb@taper" LIM=280 (the variant builds).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
R=$OUT/s21c; mkdir -p $R
GPU_TESTS_ONLY="${ONLY:-lamb adam}" SANITIZE=0 OUT=$R timeout ${LIM:-540} bash tests/gpu/run.sh > $R/gputests.log 2>&1; echo "gpu tests rc=$?" >> $R/gputests.log
tail -8 $R/gputests.log
cd $OUT && tar czf s21c.tgz s21c && rm -rf s21c
