"""tools/check_sass_loads.py on hand-written SASS: it must pass a kernel that issues every load
of its group before the first arithmetic, fail one that holds loads back, and refuse input
without the kernels it checks. (CI runs it on the library's real SASS.)"""
import pathlib
import subprocess
import sys

TOOL = pathlib.Path(__file__).resolve().parents[2] / "tools" / "check_sass_loads.py"

FORWARD_NONE_BF16 = "_ZN7mseloss6detail4cuda22mse_elementwise_kernelINS0_8BFloat16ES3_S3_Lb0ELNS1_2EwE0ELb0ELb1EEEvNS1_12KernelParamsE"
BACKWARD_NONE_F32 = "_ZN7mseloss6detail4cuda22mse_elementwise_kernelIfffLb0ELNS1_2EwE2ELb0ELb1EEEvNS1_12KernelParamsE"
FUSED_STREAM_F16 = "_ZN7mseloss6detail4cuda23mse_fused_stream_kernelINS0_4HalfES3_EEvNS1_12KernelParamsE"


def function(name, ops):
    lines = [f"\t\tFunction : {name}", "\t.headerflags\t@\"EF_CUDA_SM90\""]
    for k, op in enumerate(ops):
        lines.append(f"        /*{16 * k:04x}*/                   {op} ;        /* 0x0000000000000000 */")
    return "\n".join(lines) + "\n"


def loads(n, base=8):
    return [f"LDG.E.EF.128 R{base + 4 * k}, desc[UR8][R{60 + k}.64]" for k in range(n)]


ARITH = ["IMAD.U32 R40, R8, 0x10000, RZ", "FADD R41, R40, -R12", "FMUL R42, R41, R41"]
STORE = ["STG.E.EF.128 desc[UR8][R44.64], R40"]


def run(text):
    return subprocess.run([sys.executable, str(TOOL)], input=text, capture_output=True, text=True)


def all_kernels(forward_none_ops):
    return (function(FORWARD_NONE_BF16, ["S2R R0, SR_TID.X"] + forward_none_ops)
            + function(BACKWARD_NONE_F32, loads(12) + ARITH + STORE)
            + function(FUSED_STREAM_F16, loads(8) + ARITH + STORE))


def test_every_load_first_passes():
    r = run(all_kernels(loads(8) + ARITH + STORE))
    assert r.returncode == 0, r.stdout
    assert r.stdout.count("ok ") == 3


def test_loads_held_back_fail():
    held_back = loads(4) + ARITH + loads(4, base=8) + ARITH + STORE  # rows 2-3 after rows 0-1's arithmetic
    r = run(all_kernels(held_back))
    assert r.returncode == 1
    assert "FAIL elementwise, dealt tiles, bfloat16, forward none: 4 of 8" in r.stdout


def test_a_gradient_read_needs_twelve_loads():
    text = (function(FORWARD_NONE_BF16, loads(8) + ARITH)
            + function(BACKWARD_NONE_F32, loads(8) + ARITH + loads(4))
            + function(FUSED_STREAM_F16, loads(8) + ARITH))
    r = run(text)
    assert r.returncode == 1
    assert "FAIL elementwise, dealt tiles, float32, backward none: 8 of 12" in r.stdout


def test_input_without_the_kernels_is_refused():
    r = run(function("_Z5otherv", loads(8) + ARITH))
    assert r.returncode == 2
    assert "no kernel found" in r.stdout
