#!/bin/bash
# Session 41, device run 3: run 2 (session 39's run2.sh) found `bit` faster than `head` at some
# 16-bit points and 1.5-3 % slower in all three passes at others (bf16 backward mean 2^23,
# fp16 backward none 2^23, bf16 backward none 2^20; with grad_target bf16 backward mean 2^22).
# This run asks whether those differences hold: head, bit and bith (bit for fp16 only, where
# the spill was; bf16 and fp32 keep HEAD's negation: src/bith.patch), 16-bit only (fp32 moved
# 0.99-1.01), 2^20-2^23, 6 passes in rotating order, 200 timed runs a point.
D=$(realpath $1); W=/tmp/s41run3; rm -rf $W; mkdir -p $W; S=$W/run3_summary.txt; R=$OUT
pack() { tar czf $R/.run3.tgz -C $W . && mv $R/.run3.tgz $R/run3.tgz; }
( while sleep 15; do pack; done ) & PACKER=$!
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/mseloss_head $D/mseloss_bit $D/mseloss_bith >> $S
for i in 0 1 2 3 4 5; do
  case $((i % 6)) in 0) order="head bit bith";; 1) order="bit bith head";; 2) order="bith head bit";;
    3) order="head bith bit";; 4) order="bith bit head";; 5) order="bit head bith";; esac
  for b in $order; do
    for gt in "" "--grad-target"; do
      tag=$b$( [ -n "$gt" ] && echo gt )
      timeout 120 $D/mseloss_$b bench --device cuda --sizes 2^20,2^21,2^22,2^23 --dtypes bf16,f16 --reductions mean,none --op backward,fused $gt --runs 200 --csv $W/run3_${tag}_$i.csv > /dev/null 2>&1
      echo "bench $tag pass $i rc=$? $(date -u +%T)" >> $S
    done
  done
done
date -u >> $S
kill $PACKER; wait $PACKER 2>/dev/null; pack
cat $S
