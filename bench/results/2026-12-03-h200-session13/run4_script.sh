#!/bin/bash
# Session 13, device run 4: the last block's finish. exp0: as committed to
# the tree; exp1: the last block skips the finish (reference); exp4: every
# block runs the finish code after its ticket (only the last stores), so the
# finish's instructions are fetched early by the first blocks to finish.
S=$OUT/summary.txt
date -u > $S
for rep in 1 2; do for e in 0 1 4; do
  echo "== exp$e rep$rep" >> $OUT/big.txt
  MSELOSS_EXP=$e timeout 60 .exp/mseloss_exp bench --device cuda --sizes 2^20,2^25,2^26 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>/dev/null | grep -v "^#" | grep -v "^op " >> $OUT/big.txt
done; done
cat $S
