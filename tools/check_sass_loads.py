#!/usr/bin/env python3
"""Check, in the sm_90 machine code, that the streaming kernels' hot loops issue every load of
a group before its arithmetic (issue_loads_first in src/cuda/cuda_backend.cu).

ptxas may sink the later rows' loads of a group below the first rows' arithmetic to save
registers; a thread then keeps half its bytes in flight, which cost forward `none` 7 % on the
H200 (docs/performance.md, session 29). Nothing in the source's results shows it, so this
reads the SASS:

    cuobjdump -sass -arch sm_90 build/release/libmseloss.a | tools/check_sass_loads.py

For each checked kernel it counts the 16-byte global loads issued, from the first one, before
the first floating-point instruction, and fails unless that is the whole group: 2 x 4 rows of
x and y, 3 x 4 where the gradient is read too. Exit status 1 on a failure, 2 when a kernel it
must check is missing from the input.
"""
import re
import sys

# (what, mangled-name pattern, 16-byte loads in the group)
MODES = {"0": "forward none", "1": "backward, gradient scale", "2": "backward none", "3": "fused none"}
DTYPES = {"f": "float32", "d": "float64", "NS0_4HalfE": "float16", "NS0_8BFloat16E": "bfloat16"}
T = r"(f|d|NS0_4HalfE|NS0_8BFloat16E)"
OUT = r"(S3_|f|d)"
CHECKS = [
    # mse_elementwise_kernel<T, OutT, G, kStrided=false, kMode, kShifted=false, kDealt=true>
    ("elementwise, dealt tiles",
     re.compile(r"mse_elementwise_kernelI" + T + r"(S3_|f|d)?(S3_|f|d)?Lb0ELNS1_2EwE([0-3])ELb0ELb1EE")),
    # mse_fused_stream_kernel<T, OutT>
    ("lean fused pass", re.compile(r"mse_fused_stream_kernelI" + T + OUT + r"?EEv")),
]
FP = re.compile(r"\b(FADD|FMUL|FFMA|DADD|DMUL|DFMA|HADD2|HMUL2|HFMA2|F2F)\b")
LOAD16 = re.compile(r"\bLDG\.E[.A-Z0-9]*\.128\b")


def loads_before_arithmetic(body):
    ins = re.findall(r"/\*[0-9a-f]{4,}\*/\s+([^;]+);", body)
    first = next((k for k, s in enumerate(ins) if LOAD16.search(s)), None)
    if first is None:
        return None
    n = 0
    for s in ins[first:]:
        if FP.search(s):
            break
        if LOAD16.search(s):
            n += 1
    return n


def main():
    text = sys.stdin.read()
    seen = {what: 0 for what, _ in CHECKS}
    failed = 0
    for part in text.split("Function : ")[1:]:
        name = part.splitlines()[0].strip()
        for what, pat in CHECKS:
            m = pat.search(name)
            if not m:
                continue
            dtype = DTYPES[m.group(1)]
            out = m.group(2)
            expect = 8
            label = f"{what}, {dtype}" + (f" (fp32 loss)" if out == "f" and dtype != "float32" else "")
            if what.startswith("elementwise"):
                mode = m.group(4)
                if m.group(3) == "f" and dtype != "float32":
                    label += " (fp32 upstream gradient)"
                label += f", {MODES[mode]}"
                if mode == "2":
                    expect = 12
            got = loads_before_arithmetic(part)
            seen[what] += 1
            ok = got == expect
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {label}: {got} of {expect} loads before the first arithmetic")
    missing = [what for what, n in seen.items() if n == 0]
    if missing:
        print("no kernel found for: " + ", ".join(missing) + " (is this cuobjdump -sass of the sm_90 library?)")
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
