"""A pruned MLP: train a dense 2048-4096-2048 MLP briefly, prune both layers
to a block-sparse weight by block magnitude (st.nn.BlockSparseLinear.from_dense,
90 % of the 32 x 32 blocks removed by default), fine-tune the kept blocks,
and time training steps and inference against the dense model in turn.

    tools/python examples/pruned_mlp.py
    tools/python examples/pruned_mlp.py --density 0.2 --block 16 --threads 1
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import sparsetir_torch as st


class MLP(torch.nn.Module):
    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(width, hidden), torch.nn.Linear(hidden, width)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def pruned(model: MLP, block: int, density: float) -> MLP:
    sparse = MLP.__new__(MLP)
    torch.nn.Module.__init__(sparse)
    sparse.fc1 = st.nn.BlockSparseLinear.from_dense(model.fc1, (block, block), density)
    sparse.fc2 = st.nn.BlockSparseLinear.from_dense(model.fc2, (block, block), density)
    return sparse


def train(model, data, steps: int, lr: float = 1e-3) -> list:
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        x, y = data(step)
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def median_ms(fn, rounds: int) -> float:
    fn()  # warm-up: compiles the kernels
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--block", type=int, default=32)
    p.add_argument("--density", type=float, default=0.1, help="fraction of blocks kept")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--dense-steps", type=int, default=20)
    p.add_argument("--steps", type=int, default=20, help="fine-tuning steps after pruning")
    p.add_argument("--rounds", type=int, default=7, help="timed repetitions")
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    teacher = MLP(args.width, args.hidden).requires_grad_(False)

    def data(step):
        g = torch.Generator().manual_seed(step)
        x = torch.randn(args.batch, args.width, generator=g)
        return x, teacher(x)

    model = MLP(args.width, args.hidden)
    print(f"MLP {args.width}-{args.hidden}-{args.width}, batch {args.batch}, {torch.get_num_threads()} threads")
    dense_losses = train(model, data, args.dense_steps)
    sparse = pruned(model, args.block, args.density)
    x, y = data(10**6)
    with torch.no_grad():
        print(f"dense loss {F.mse_loss(model(x), y).item():.4f} after {args.dense_steps} steps "
              f"(from {dense_losses[0]:.4f}); pruned to {sparse.fc1.density:.0%} of the "
              f"{args.block}x{args.block} blocks: loss {F.mse_loss(sparse(x), y).item():.4f}")
    losses = train(sparse, data, args.steps)
    print(f"fine-tuned {args.steps} steps: loss {losses[0]:.4f} -> {losses[-1]:.4f}")

    # Timing: one training step of each model, then inference, in turn.
    def step(m, opt):
        def run():
            opt.zero_grad()
            F.mse_loss(m(x), y).backward()
            opt.step()
        return run

    dense_step = step(model, torch.optim.Adam(model.parameters(), lr=1e-3))
    sparse_step = step(sparse, torch.optim.Adam(sparse.parameters(), lr=1e-3))
    td, ts = median_ms(dense_step, args.rounds), median_ms(sparse_step, args.rounds)
    print(f"training step: dense {td:.1f} ms, block-sparse {ts:.1f} ms: {td / ts:.2f}x")
    with torch.inference_mode():
        for batch in (1, 16, 64, args.batch):
            xb = x[:batch]
            td, ts = median_ms(lambda: model(xb), args.rounds), median_ms(lambda: sparse(xb), args.rounds)
            print(f"inference batch {batch:4d}: dense {td:.2f} ms, block-sparse {ts:.2f} ms: {td / ts:.2f}x")


if __name__ == "__main__":
    main()
