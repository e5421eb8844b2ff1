#!/bin/bash
# Session 29, device run 2: (a) session 28's run 4 benches again (their CSVs did not come back
# from run 1: more than 8 files); (b) the elementwise kernel's dealt-tile shape on the H200:
# `final` (4 rows, 2 blocks per SM), `b3` / `b4` (3 / 4 blocks per SM), `r8` (8 rows, 2 blocks per
# SM), three passes rotating, all elementwise modes at 2^24-2^28; (c) the SASS of forward none and
# backward mean (bf16, dealt) where a cuobjdump is found. Everything is packed into $OUT/run2.tgz.
D=$1; W=/tmp/run2; mkdir -p $W; S=$W/run2_summary.txt
date -u > $S; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $S
md5sum $D/* >> $S
for i in 0 1; do
  for b in $( [ $i = 0 ] && echo head final || echo final head ); do
    timeout 30 $D/mseloss_$b bench --device cuda --sizes 3244032,3252224,2^22,2^23,2^24,2^25,2^26,2^28 --dtypes f32 --reductions mean --op fused --runs 30 --csv $W/run4_${b}_f32_$i.csv > /dev/null 2>&1
    echo "bench $b f32 pass $i rc=$? $(date -u +%T)" >> $S
    timeout 30 $D/mseloss_$b bench --device cuda --sizes 2^22,6488064,6504448,2^23,10813440,10829824,2^24,2^25,2^26,2^28 --dtypes bf16,f16 --reductions mean --op fused --runs 30 --csv $W/run4_${b}_16_$i.csv > /dev/null 2>&1
    echo "bench $b 16 pass $i rc=$? $(date -u +%T)" >> $S
  done
done
for i in 0 1 2; do
  for b in final b3 b4 r8; do
    timeout 60 $D/mseloss_$b bench --device cuda --sizes 2^24,2^25,2^26,2^28 --dtypes bf16,f16,f32 --reductions none,mean --op forward,backward,fused --runs 30 --csv $W/ew_${b}_$i.csv > /dev/null 2>&1
    echo "bench ew $b pass $i rc=$? $(date -u +%T)" >> $S
  done
done
CU=$(command -v cuobjdump || find / -xdev -name cuobjdump -type f 2>/dev/null | head -1)
echo "cuobjdump: $CU" >> $S
if [ -n "$CU" ]; then
  $CU -sass $D/mseloss_final > $W/final.sass 2>&1
  python3 - $W/final.sass > $W/sass_ew_bf16_dealt.txt <<'PY'
import sys,re
txt=open(sys.argv[1]).read()
for name in ['mse_elementwise_kernelINS0_8BFloat16ES3_S3_Lb0ELNS1_2EwE0ELb0ELb1E','mse_elementwise_kernelINS0_8BFloat16ES3_S3_Lb0ELNS1_2EwE1ELb0ELb1E']:
    i=txt.find('Function : _ZN7mseloss6detail4cuda22'+name)
    j=txt.find('Function :',i+10)
    print(txt[i:j])
PY
  xz -9 $W/final.sass
fi
date -u >> $S
tar -czf $OUT/run2.tgz -C $W .
cp $S $OUT/
cat $S
