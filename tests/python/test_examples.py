"""Smoke tests of examples/: each runs on a small subgraph of a shipped
matrix for a few epochs, in a fresh process, and must train (the loss falls)
and print its comparison lines."""
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, cuda_include_options, needs_nvrtc, ptx_param_sizes

EXAMPLES = os.path.join(REPO_ROOT, "examples")


def run_example(script: str, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO_ROOT, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *args], capture_output=True, text=True,
                          env=env, timeout=600, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize("model", ("gcn", "sage --aggr mean", "sage --aggr max", "gat --heads 2", "gin",
                                   "sage --aggr mean --torch-dropout"))
def test_gnn_node_classification_trains(model):
    out = run_example("gnn_node_classification.py", "--model", *model.split(), "--graph", "email-Enron",
                      "--max-nodes", "400", "--epochs", "12", "--hidden", "16", "--compare")
    losses = [float(v) for v in re.findall(r"loss (\d+\.\d+)", out)]
    assert len(losses) >= 2 and losses[-1] < losses[0], out
    assert re.search(r"st\.nn: test accuracy 0\.\d+", out), out
    try:
        import torch_geometric  # noqa: F401
        assert "st.nn is" in out and "PyG" in out, out
    except ImportError:
        pass


def test_pruned_mlp_prunes_fine_tunes_and_times():
    out = run_example("pruned_mlp.py", "--width", "256", "--hidden", "512", "--batch", "32", "--dense-steps", "4",
                      "--steps", "6", "--rounds", "2")
    assert "pruned to 10% of the 32x32 blocks" in out, out
    first, last = (float(v) for v in re.search(r"fine-tuned 6 steps: loss (\d+\.\d+) -> (\d+\.\d+)", out).groups())
    assert last < first, out
    assert re.search(r"training step: dense .* ms, block-sparse .* ms", out), out
    assert len(re.findall(r"inference batch", out)) == 4, out


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("model", ("gcn", "sage"))
def test_ddp_two_processes_match_single_process_training(model):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO_ROOT, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
                           str(free_port()), os.path.join(EXAMPLES, "ddp_gnn.py"), "--model", model, "--max-nodes",
                           "400", "--steps", "3", "--hidden", "16"], capture_output=True, text=True, env=env,
                          timeout=600, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"2 processes \(gloo\): .*: equal", done.stdout), done.stdout + done.stderr


def test_sparse_transformer_trains_and_times():
    out = run_example("sparse_transformer.py", "--length", "128", "--dim", "64", "--window", "8", "--steps", "6",
                      "--rounds", "2")
    first, last = (float(v) for v in re.findall(r"step \d+: loss (\d+\.\d+)", out))
    assert last < first, out
    assert "attention alone: SDPA with mask" in out and "block step (attention + FFN)" in out, out


def test_gnn_node_classification_under_torch_compile():
    out = run_example("gnn_node_classification.py", "--model", "gcn", "--graph", "email-Enron", "--max-nodes", "300",
                      "--epochs", "6", "--hidden", "16", "--compile")
    losses = [float(v) for v in re.findall(r"loss (\d+\.\d+)", out)]
    assert len(losses) >= 2 and losses[-1] < losses[0], out
    assert re.search(r"st\.nn: test accuracy 0\.\d+", out), out


def test_custom_cuda_kernel_runs_under_the_emulator_and_its_planted_race_is_reported():
    out = run_example("custom_cuda_kernel.py", "--graph", "email-Enron", "--max-nodes", "300", "--features", "16")
    assert "emulated csr_spmm_half: max |error|" in out and "race check: the same bytes in every order" in out, out
    assert "no GPU here" in out or "from the emulated result" in out, out
    out = run_example("custom_cuda_kernel.py", "--graph", "email-Enron", "--max-nodes", "300", "--features", "16",
                      "--plant-race")
    race = "race check: SIMT emulator race check: kernel 'csr_spmm_half' wrote different values to 'argument 4'"
    assert race in out, out


@needs_nvrtc
def test_custom_cuda_kernel_is_valid_cuda():
    import importlib.util
    if cuda_include_options("cuda_fp16.h", "cooperative_groups.h", "nv/target", "cuda/std/type_traits") is None:
        pytest.skip("no CUDA headers here (neither the nvidia-cuda-runtime wheel nor a CUDA toolkit)")
    sys.path.insert(0, EXAMPLES)
    try:
        path = os.path.join(EXAMPLES, "custom_cuda_kernel.py")
        spec = importlib.util.spec_from_file_location("custom_cuda_kernel", path)
        example = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(example)
    finally:
        sys.path.remove(EXAMPLES)
    ptx = example.KERNEL.ptx("sm_80")
    assert ".entry csr_spmm_half" in ptx
    # What a launch would pass is what NVRTC compiled: five pointers, three ints.
    sizes = [p.bytes for p in example.KERNEL.params]
    assert sizes == ptx_param_sizes(ptx, "csr_spmm_half") == [8] * 5 + [4] * 3
