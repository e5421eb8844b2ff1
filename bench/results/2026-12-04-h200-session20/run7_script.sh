B=build/hopper; S=$OUT/summary.txt; R=$PWD; date -u > $S
for i in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 420 $B/tests/test_cuda > $OUT/test_cuda_$i.log 2>&1; echo "test_cuda shard $i/4 rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/test_cuda_$i.log | tr '\n' ' ')" >> $S ) &
done
( MSELOSS_TEST_MAX_N=140000 timeout 300 compute-sanitizer --tool memcheck --leak-check full $B/tests/test_cuda --gtest_filter='*ChunkCounts*:*GridSize*:*BackToBack*' > /tmp/mc.log 2>&1; echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED)' /tmp/mc.log | tr '\n' ' ')" >> $S
  MSELOSS_TEST_MAX_N=140000 timeout 200 compute-sanitizer --tool racecheck $B/tests/test_cuda --gtest_filter='*ChunkCounts*' > /tmp/rc.log 2>&1; echo "racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY|^\[  (PASSED|FAILED)' /tmp/rc.log | tr '\n' ' ' )" >> $S ) &
( timeout 120 $B/tests/test_shard > /tmp/sh.log 2>&1; echo "test_shard rc=$?: $(grep -E '^\[  (PASSED|FAILED)' /tmp/sh.log | tr '\n' ' ')" >> $S
  python3 -c "import mseloss" 2>/dev/null || CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1
  cd /tmp && timeout 250 python3 -m pytest -q -p no:cacheprovider $R/tests/python > /tmp/pytest.log 2>&1; echo "pytest rc=$?: $(tail -1 /tmp/pytest.log)" >> $S ) &
wait
timeout 60 $B/mseloss bench --device cuda --sizes 2^14,2^16,2^17,2^18 --dtypes f32,bf16,f16 --reductions mean --op forward,fused --runs 30 2>&1 | grep -v "^#" > $OUT/small.txt
date -u >> $S; cat $S; cat $OUT/small.txt | head -40
