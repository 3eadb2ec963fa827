# minijax bench peer: the MLP training step (784-512-512-10, ReLU, cross-entropy, Adam 1e-3, batch
# 128) in PyTorch, timed as bench/mlp_step.cc times minijax's; prints one JSON line.
#
# The same model as samples/fashion_mnist_mlp_lib.cc; 16 batches of the first 2048 training
# examples assembled before timing and cycled; median of `steps` steps after `warmup`. Two threads.
# Usage: /usr/bin/python3 torch_mlp.py [steps (200)] [warmup (20)]
import datetime, gzip, json, os, statistics, sys, time

import numpy as np
import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 20
load_before = ' '.join(open('/proc/loadavg').read().split()[:3])
torch.set_num_threads(2)
torch.manual_seed(0)
B, NB = 128, 16
d = os.environ.get('MINIJAX_FASHION_MNIST', '/usr/share/datasets/fashion-mnist')
try:
    X = np.frombuffer(gzip.open(d + '/train-images-idx3-ubyte.gz').read(), np.uint8, offset=16)[:B * NB * 784]
    Y = np.frombuffer(gzip.open(d + '/train-labels-idx1-ubyte.gz').read(), np.uint8, offset=8)[:B * NB]
    source = 'fashion-mnist'
except OSError:
    rng = np.random.default_rng(0)
    X, Y = rng.integers(0, 256, B * NB * 784, np.uint8), rng.integers(0, 10, B * NB, np.uint8)
    source = 'random'
X = torch.from_numpy(X.reshape(-1, 784).astype(np.float32) / 255)
Y = torch.from_numpy(Y.astype(np.int64))
xs = [X[b * B:(b + 1) * B].contiguous() for b in range(NB)]
ys = [Y[b * B:(b + 1) * B].contiguous() for b in range(NB)]
m = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                        torch.nn.Linear(512, 10))
opt = torch.optim.Adam(m.parameters(), 1e-3)
t = []
for i in range(warmup + steps):
    t0 = time.perf_counter()
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(m(xs[i % NB]), ys[i % NB])
    loss.backward()
    opt.step()
    if i >= warmup:
        t.append(time.perf_counter() - t0)
pol = os.sched_getscheduler(0)
sched = {os.SCHED_FIFO: 'SCHED_FIFO', os.SCHED_RR: 'SCHED_RR', os.SCHED_OTHER: 'SCHED_OTHER'}.get(pol, f'policy {pol}')
if pol in (os.SCHED_FIFO, os.SCHED_RR):
    sched += f' {os.sched_getparam(0).sched_priority}'
cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), 'unknown')
print(json.dumps({
    'name': 'pytorch_mlp_step', 'torch': torch.__version__, 'threads': torch.get_num_threads(), 'data': source,
    'steps': steps, 'warmup': warmup,
    'step': {'median_ms': statistics.median(t) * 1e3, 'min_ms': min(t) * 1e3, 'max_ms': max(t) * 1e3, 'n': len(t)},
    'loss_last': loss.item(),
    'env': {'date': datetime.datetime.now().astimezone().isoformat(timespec='seconds'), 'cpu': cpu,
            'cpus_online': os.cpu_count(), 'loadavg_before': load_before,
            'loadavg_after': ' '.join(open('/proc/loadavg').read().split()[:3]),
            'OMP_WAIT_POLICY': os.environ.get('OMP_WAIT_POLICY'), 'OMP_NUM_THREADS': os.environ.get('OMP_NUM_THREADS'),
            'OPENBLAS_CORETYPE': os.environ.get('OPENBLAS_CORETYPE'), 'MINIJAX_BENCH_LABEL': os.environ.get('MINIJAX_BENCH_LABEL'), 'sched': sched, 'git': os.environ.get('MINIJAX_BENCH_GIT')},
}))
