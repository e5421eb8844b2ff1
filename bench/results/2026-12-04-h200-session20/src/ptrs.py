import statistics, torch, mseloss, torch.nn.functional as F
ops = torch.ops.mseloss
def dev(fn, runs=21, reps=10):
    for _ in range(3): fn()
    torch.cuda.synchronize(); r = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(100000); a.record()
        for _ in range(reps): fn()
        b.record(); b.synchronize(); r.append(a.elapsed_time(b) * 1e3 / reps)
    return statistics.median(r)
n = 1 << 25
x = torch.randn(n, device="cuda"); y = torch.randn(n, device="cuda")
seen = {}
def call():
    loss, gi, gt = ops.mse_loss_and_grad(x, y, 1, None, False, 1.0)
    seen["g"] = gi.data_ptr()
junk = []
for k in range(8):
    t = dev(call)
    g = seen["g"]
    print(f"round {k}: fused {t:7.2f} us  x {x.data_ptr():#x} y-x {(y.data_ptr()-x.data_ptr())/2**20:9.3f} MiB  g-x {(g-x.data_ptr())/2**20:10.3f} MiB  g mod 2MiB {g % (2<<20)}", flush=True)
    junk.append(torch.empty(int(2**20 * (1 + 3 * k)), device="cuda"))  # shift the next gradient's block
    loss, gi, gt = ops.mse_loss_and_grad(x, y, 1, None, False, 1.0); junk.append(gi)  # hold one gradient block
