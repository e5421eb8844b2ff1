import time, statistics, sys, torch, mseloss, torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity
ops = torch.ops.mseloss
fused = ops.mse_loss_fused.default
def wall(fn, reps=500, rounds=15):
    for _ in range(100): fn()
    torch.cuda.synchronize(); r = []
    for _ in range(rounds):
        a = time.perf_counter()
        for _ in range(reps): fn()
        r.append((time.perf_counter() - a) / reps * 1e6)
        torch.cuda.synchronize()
    return statistics.median(r)
def dev(fn, runs=30, reps=10):
    for _ in range(5): fn()
    torch.cuda.synchronize(); r = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(100000); a.record()
        for _ in range(reps): fn()
        b.record(); b.synchronize(); r.append(a.elapsed_time(b) * 1e3 / reps)
    return statistics.median(r)
for n in (1 << 10, 1 << 25):
    x = torch.randn(n, device="cuda", requires_grad=True); y = torch.randn(n, device="cuda")
    steps = {
        "eager": lambda: (setattr(x, "grad", None), F.mse_loss(x, y).backward()),
        "mseloss.mse_loss": lambda: (setattr(x, "grad", None), mseloss.mse_loss(x, y).backward()),
        "op overload": lambda: (setattr(x, "grad", None), fused(x, y, 1, None).backward()),
        "fwd only mseloss": lambda: mseloss.mse_loss(x, y),
        "fwd only overload": lambda: fused(x, y, 1, None),
        "fwd only eager": lambda: F.mse_loss(x, y),
    }
    for k, f in steps.items():
        print(f"n=2^{n.bit_length()-1} {k:20s} host wall {wall(f, reps=500 if n < 1e6 else 40):7.2f} us  events {dev(f):7.2f} us", flush=True)
x = torch.randn(1024, device="cuda", requires_grad=True); y = torch.randn(1024, device="cuda")
for name, f in (("mseloss", lambda: mseloss.mse_loss(x, y)), ("eager", lambda: F.mse_loss(x, y))):
    for _ in range(50): x.grad = None; f().backward()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU]) as p:
        for _ in range(200): x.grad = None; f().backward()
        torch.cuda.synchronize()
    print(f"== profile {name} (200 steps)")
    print(p.key_averages().table(sort_by="cpu_time_total", row_limit=25))
