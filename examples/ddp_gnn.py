"""Data-parallel GNN training with DistributedDataParallel: every process
holds the whole graph and computes the loss on its share of the training
nodes; DDP averages the gradients. Rank 0 also trains the same model in one
process on all training nodes and checks that the gradients and the trained
weights agree.

    tools/python -m torch.distributed.run --nproc_per_node 2 examples/ddp_gnn.py
    tools/python -m torch.distributed.run --nproc_per_node 2 examples/ddp_gnn.py --model sage --steps 20

gloo on the CPU, nccl when CUDA is available (--backend overrides).
"""
from __future__ import annotations

import argparse
import copy
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sparsetir_torch as st  # noqa: E402
from _data import load_graph, node_data  # noqa: E402
from gnn_node_classification import Net  # noqa: E402


def shares(train: torch.Tensor, world: int) -> list:
    """The training nodes split into `world` equal shares (a remainder is
    dropped), so that the mean of the shares' mean losses is the mean loss."""
    nodes = torch.nonzero(train).flatten()
    per = nodes.numel() // world
    return [nodes[r * per:(r + 1) * per] for r in range(world)]


def loss_on(model, x, graph, y, nodes):
    return F.cross_entropy(model(x, graph)[nodes], y[nodes])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=("gcn", "sage", "gat", "gin"), default="gcn")
    p.add_argument("--graph", default="email-Enron")
    p.add_argument("--max-nodes", type=int, default=None)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--backend", default=None)
    args = p.parse_args(argv)
    backend = args.backend or ("nccl" if torch.cuda.is_available() else "gloo")
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))

    torch.manual_seed(0)
    edge_index, n = load_graph(args.graph, args.max_nodes)
    x, y, train, _ = node_data(edge_index, n)
    classes = int(y.max()) + 1
    model = Net(st.nn, args.model, x.shape[1], args.hidden, classes, 4, "mean")
    model.eval()  # no dropout: the processes and the reference must compute the same function
    reference = copy.deepcopy(model)
    ddp = DistributedDataParallel(model)
    parts = shares(train, world)
    mine, everyone = parts[rank], torch.cat(parts)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.05)
    worst_grad = 0.0
    for step in range(args.steps):
        opt.zero_grad()
        loss = loss_on(ddp, x, edge_index, y, mine)
        loss.backward()  # DDP averages the gradients over the processes
        if rank == 0:
            ref_opt.zero_grad()
            ref_loss = loss_on(reference, x, edge_index, y, everyone)
            ref_loss.backward()
            for a, b in zip(model.parameters(), reference.parameters()):
                worst_grad = max(worst_grad, (a.grad - b.grad).abs().max().item() / (1e-12 + b.grad.abs().max().item()))
            ref_opt.step()
            print(f"step {step}: loss on rank 0's share {loss.item():.4f}, single-process loss {ref_loss.item():.4f}")
        opt.step()
    if rank == 0:
        worst_weight = max((a - b).abs().max().item() for a, b in zip(model.parameters(), reference.parameters()))
        ok = worst_grad < 1e-4 and worst_weight < 1e-4
        print(f"{world} processes ({backend}): largest relative gradient difference from single-process training "
              f"{worst_grad:.2e}, largest weight difference after {args.steps} steps {worst_weight:.2e}: "
              f"{'equal' if ok else 'DIFFERENT'}")
        if not ok:
            dist.destroy_process_group()
            raise SystemExit(1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
