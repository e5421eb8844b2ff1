#!/bin/bash
# Session 42, device run 1: session 41's run 4 (never ran there), with test_cuda_spec (main's
# library + src/specials_test.patch) in place of test_cuda_bitm; then the new test on
# test_cuda_mutant, whose negated_half_vector flips the sign of the canonical NaN too. It must
# fail there: a test that cannot fail proves nothing.
D=$(realpath $1); H=$(dirname $(realpath $0))
TEST=test_cuda_spec bash $H/../../2026-12-07-session41/src/run4.sh $D
NEW=CudaTest.SpecialValuesGiveTheCpuBitsAndAnExactlyNegatedGradTargetInEveryGradientForm
S=$OUT/run1_mutant.txt; grep -h "OK \] $NEW" /tmp/s41run4/test_bitm_*.log > $S
timeout 240 $D/test_cuda_mutant --gtest_filter=$NEW > /tmp/s42_mutant.log 2>&1
echo "mutant, new test: rc=$? (must be nonzero); $(grep -c 'is not the exact negation' /tmp/s42_mutant.log) negation failures, $(grep -c 'grad_target differs' /tmp/s42_mutant.log) CPU-bit failures" >> $S
grep -h "is not the exact negation" /tmp/s42_mutant.log | head -8 >> $S
cat $S
