.exp/step_gpu > $OUT/step_gpu_legacy.txt 2>&1; OWN_STREAM=1 .exp/step_gpu > $OUT/step_gpu_own.txt 2>&1
head -9 $OUT/step_gpu_legacy.txt; head -9 $OUT/step_gpu_own.txt
( CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1; echo "pip rc=$?" )
cd /tmp && python3 $OLDPWD/.exp/step_torch.py 2>&1 | tee $OUT/step_torch.txt
