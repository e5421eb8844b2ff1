set -o pipefail
S=$OUT/summary.txt; date -u > $S; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
( CMAKE_ARGS=-DCMAKE_CUDA_ARCHITECTURES=90 python3 -m pip install --no-build-isolation --no-deps -q . > /tmp/pip.log 2>&1; echo "pip rc=$?" > /tmp/pip.rc ) &
PIP=$!
.exp/host_probe > $OUT/host_probe.txt 2>&1; echo "probe rc=$?" >> $S
wait $PIP; cat /tmp/pip.rc >> $S; tail -3 /tmp/pip.log >> $S
.exp/host_probe > $OUT/host_probe_quiet.txt 2>&1
cd /tmp && PYTHONUNBUFFERED=1 timeout 200 python3 $OLDPWD/.exp/step_host.py > $OUT/step_host.txt 2>&1; echo "step_host rc=$?" >> $S
cat $S $OUT/host_probe_quiet.txt; head -20 $OUT/step_host.txt
