import statistics, time, torch, mseloss, torch.nn.functional as F
ops = torch.ops.mseloss
def dev(fn, lead, runs=31, reps=10):
    for _ in range(5): fn()
    torch.cuda.synchronize(); r = []; h = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(lead); a.record()
        t0 = time.perf_counter()
        for _ in range(reps): fn()
        t1 = time.perf_counter()
        b.record(); b.synchronize(); r.append(a.elapsed_time(b) * 1e3 / reps); h.append((t1 - t0) * 1e6 / reps)
    return statistics.median(r), statistics.median(h)
for n in (1 << 25, 1 << 26):
    x = torch.randn(n, device="cuda", requires_grad=True); y = torch.randn(n, device="cuda")
    xd = x.detach()
    def no_autograd():
        loss, gi, gt = ops.mse_loss_and_grad(xd, y, 1, None, False, 1.0)
        ops.scale_gradient_(gi, gt, torch.ones_like(loss))
    def step():
        x.grad = None; mseloss.mse_loss(x, y).backward()
    def step_eager():
        x.grad = None; F.mse_loss(x, y).backward()
    for rep in range(2):
        for name, f in (("no autograd", no_autograd), ("step mseloss", step), ("step eager", step_eager)):
            for lead in (100000, 1000000):
                d, h = dev(f, lead)
                print(f"n=2^{n.bit_length()-1} {name:14s} lead {lead:8d} cycles: events {d:8.2f} us/step, host enqueue {h:7.2f} us/step", flush=True)
