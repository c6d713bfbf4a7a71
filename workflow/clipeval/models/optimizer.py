"""AdamW whose update is the same bits on every CPU.

torch.optim.AdamW divides by `exp_avg_sq.sqrt()`. On the CPU, torch computes a
float32 tensor's square root with MKL's vector math (vmsSqrt), which is not
correctly rounded and whose last bit changes with the CPU that runs it, under
any MKL_CBWR setting: an AMD EPYC and an emulated Intel CPU, under the same
pinned code path, train other weights from the same data
(docs/REPRODUCIBILITY.md). IEEE 754 fixes the square root to the last bit, and
numpy computes it with the CPU's correctly rounded instruction, so this
optimizer takes it from there. Every other step is torch.optim.AdamW's
update, operation for operation: elementwise IEEE arithmetic, the same on any
CPU with the same instruction set.
"""

import math

import numpy as np
import torch


def correctly_rounded_sqrt(tensor: torch.Tensor) -> torch.Tensor:
    """The IEEE square root of each element, as a new tensor on `tensor`'s device."""
    if tensor.device.type != "cpu":
        return tensor.sqrt()  # CUDA's sqrt is correctly rounded
    flat = tensor.detach().contiguous().reshape(-1).numpy()
    return torch.from_numpy(np.sqrt(flat)).reshape(tensor.shape)


class PortableAdamW(torch.optim.Optimizer):
    """Adam with decoupled weight decay (Loshchilov & Hutter), torch.optim.AdamW's update."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):
        if closure is not None:
            raise ValueError("PortableAdamW.step takes no closure")
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self.state[param]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(param)
                    state["exp_avg_sq"] = torch.zeros_like(param)
                state["step"] += 1
                exp_avg, exp_avg_sq, grad = state["exp_avg"], state["exp_avg_sq"], param.grad
                param.mul_(1 - group["lr"] * group["weight_decay"])
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** state["step"]
                bias_correction2 = 1 - beta2 ** state["step"]
                denominator = (correctly_rounded_sqrt(exp_avg_sq) / math.sqrt(bias_correction2)).add_(group["eps"])
                param.addcdiv_(exp_avg, denominator, value=-group["lr"] / bias_correction1)
        return None
