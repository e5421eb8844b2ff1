set -x
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpc__cycles_elapsed.max
for cc in "none all" "none none" "base all"; do
  set -- $cc
  ncu --clock-control $1 --cache-control $2 -k regex:"reg_kernel|fin_kernel|mse_reduce" --metrics $M --csv ./lib p > $OUT/ncu9_clock-$1_cache-$2.csv 2>/dev/null
done
