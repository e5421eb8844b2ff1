#!/bin/bash
# Session 32, device run 4: session 31's run3.sh (lean16 as `final` against `head`: benches in
# three passes, test_cuda of `final`, Nsight Compute on an H200) with its outputs packed into
# $OUT/run4.tgz every 15 s and at the end. $OUT returns at most 8 files and run3.sh writes 29
# there; packing as it goes keeps what a run cut short had measured.
# Usage: run4.sh PACK (the folder with mseloss_head, mseloss_final, test_cuda_final).
HERE=$(dirname $(realpath $0)); W=/tmp/run4; mkdir -p $W; R=$OUT
pack() { tar czf $R/.run4.tgz -C $W . && mv $R/.run4.tgz $R/run4.tgz; }
( while sleep 15; do pack; done ) & PACKER=$!
OUT=$W bash $HERE/../../2026-12-06-session31/src/run3.sh $(realpath $1)
kill $PACKER; wait $PACKER 2>/dev/null; pack
