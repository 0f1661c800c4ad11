#!/usr/bin/env bash
# session 32 job 2: what job 1's 200-s test limit cut off. pipeline@fallback (B = 1 over stages
# of 2 ranks: the program unscheduled) at 4 GPUs with the sample's build, and one C-interface
# handle per rank running the default sizes, the fallback's sizes and the default again
# (megatron_row, megatron_mlp, dlrm_embedding at 2 GPUs; megatron_row and megatron_mlp at 4).
# -> $OUT/s32b
set -uo pipefail
export NCCL_NVLS_ENABLE=0
R=$OUT/s32b; mkdir -p $R
b=.gpu-bundle
NC=$(ls -d /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl | head -n 1)
{ echo "== date $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c; cat $b/commit.txt; } > $R/results.txt
bash tests/gpu/make-vectors.sh $b/dumps > $R/make-vectors.log 2>&1 || echo "make-vectors FAILED" >> $R/results.txt
for n in pipeline megatron_row megatron_mlp dlrm_embedding; do
  ( cmake -S $b/gen/$n -B $b/gen/$n/build -DNCCL_ROOT=$NC > $R/build-$n.log 2>&1 && cmake --build $b/gen/$n/build -j 4 >> $R/build-$n.log 2>&1 ) &
done
wait
run() {  # LABEL COMMAND...
  local label=$1; shift
  if timeout 180 "$@" > "$R/$(echo "$label" | tr -c 'A-Za-z0-9@._-' '_').log" 2>&1; then echo "$label: ok" >> $R/results.txt
  else echo "$label: FAILED" >> $R/results.txt; fi
}
run "pipeline@fallback (gen/pipeline) P=4" $b/gen/pipeline/build/pipeline_main --spawn 4 --check $b/dumps/pipeline@fallback/ranks4 --timeout 60
for n in megatron_row megatron_mlp dlrm_embedding; do
  v=$(ls -d $b/dumps/$n@decode $b/dumps/$n@fallback 2>/dev/null | head -n 1)
  for P in 2 4; do
    [ -f $b/dumps/$n/ranks$P/manifest.txt ] && [ -f $v/ranks$P/manifest.txt ] || continue
    run "capi $n P=$P: default, $(basename $v), default on one handle" python3 tests/gpu/capi_check.py $b/gen/$n/build $b/dumps/$n/ranks$P $v/ranks$P $b/dumps/$n/ranks$P
  done
done
for f in $R/*.log; do grep -q "through the C interface" $f && { echo "-- $(basename $f)"; grep -c ": ok" $f; tail -n 1 $f; } >> $R/results.txt; done
cat $R/results.txt
cd $OUT && tar czf s32b.tgz s32b && rm -rf s32b
