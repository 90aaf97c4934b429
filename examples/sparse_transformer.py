"""A transformer encoder block with sparse attention (a sliding window plus
global tokens, st.nn.SparseMultiheadAttention) and a block-pruned
feed-forward network (st.nn.BlockSparseLinear), trained on a toy
sequence task and timed, step by step in turn, against the same block with
torch's scaled_dot_product_attention under the pattern as a mask and a dense
feed-forward network.

    tools/python examples/sparse_transformer.py                 # L = 2048
    tools/python examples/sparse_transformer.py --length 512 --window 32 --ffn-density 0.2
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import sparsetir_torch as st
from sparsetir_torch.nn import attention_patterns as ap


class Block(torch.nn.Module):
    """Pre-norm encoder block: x + attention(LN(x)), then x + FFN(LN(x))."""

    def __init__(self, dim, heads, ffn, attention, fc1, fc2):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.attention, self.fc1, self.fc2 = attention, fc1, fc2

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class MaskedAttention(torch.nn.Module):
    """torch.nn.MultiheadAttention's projections around scaled_dot_product_attention with a bool mask."""

    def __init__(self, dim, heads, mask):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(dim, heads, batch_first=True)
        self.heads, self.mask = heads, mask

    def forward(self, x):
        b, n, e = x.shape
        q, k, v = F.linear(x, self.mha.in_proj_weight, self.mha.in_proj_bias).chunk(3, dim=-1)
        q, k, v = (t.view(b, n, self.heads, e // self.heads).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)
        return self.mha.out_proj(out.transpose(1, 2).reshape(b, n, e))


class SparseAttention(torch.nn.Module):
    def __init__(self, dim, heads, pattern):
        super().__init__()
        self.attn = st.nn.SparseMultiheadAttention(dim, heads, pattern=pattern)

    def forward(self, x):
        return self.attn(x)[0]


def median_ms(fn, rounds):
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--length", type=int, default=2048)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--window", type=int, default=64)
    p.add_argument("--global-tokens", type=int, default=4)
    p.add_argument("--ffn-density", type=float, default=0.1, help="fraction of the 32x32 FFN blocks kept")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    L, E = args.length, args.dim
    pattern = ap.union(ap.sliding_window(L, args.window), ap.global_tokens(L, tuple(range(args.global_tokens))))
    mask = pattern.to_dense() > 0
    print(f"L = {L}, dim {E}, {args.heads} heads, window {args.window}, {args.global_tokens} global tokens: "
          f"{pattern.nnz / L / L:.1%} of the scores; FFN {E}-{4 * E}-{E} at {args.ffn_density:.0%} of its blocks; "
          f"{torch.get_num_threads()} threads")
    dense_fc1, dense_fc2 = torch.nn.Linear(E, 4 * E), torch.nn.Linear(4 * E, E)
    dense = Block(E, args.heads, 4 * E, MaskedAttention(E, args.heads, mask), dense_fc1, dense_fc2)
    sparse = Block(E, args.heads, 4 * E, SparseAttention(E, args.heads, pattern),
                   st.nn.BlockSparseLinear.from_dense(dense_fc1, (32, 32), args.ffn_density),
                   st.nn.BlockSparseLinear.from_dense(dense_fc2, (32, 32), args.ffn_density))
    sparse.attention.attn.load_state_dict(dense.attention.mha.state_dict())
    sparse.ln1.load_state_dict(dense.ln1.state_dict())
    sparse.ln2.load_state_dict(dense.ln2.state_dict())

    # A toy task: reproduce a local average of the input (what a window sees).
    def batch(step):
        g = torch.Generator().manual_seed(step)
        x = torch.randn(args.batch, L, E, generator=g)
        target = F.avg_pool1d(x.transpose(1, 2), 5, stride=1, padding=2).transpose(1, 2)
        return x, target

    opt = torch.optim.Adam(sparse.parameters(), lr=1e-3)
    for step in range(args.steps):
        x, target = batch(step)
        opt.zero_grad()
        loss = F.mse_loss(sparse(x), target)
        loss.backward()
        opt.step()
        if step in (0, args.steps - 1):
            print(f"step {step}: loss {loss.item():.4f}")

    x, target = batch(10**6)

    def train_step(model):
        def run():
            model.zero_grad()
            F.mse_loss(model(x), target).backward()
        return run

    for name, a, b in (("block step (attention + FFN)", dense, sparse),
                       ("attention alone", dense.attention, sparse.attention)):
        td, ts = median_ms(train_step(a), args.rounds), median_ms(train_step(b), args.rounds)
        print(f"{name}: SDPA with mask / dense {td:.1f} ms, sparse {ts:.1f} ms: {td / ts:.2f}x")


if __name__ == "__main__":
    main()
