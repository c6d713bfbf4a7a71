"""The training optimizer: torch's AdamW update with a correctly rounded square root."""

import numpy as np
import pytest
import torch

from clipeval.models.optimizer import PortableAdamW, correctly_rounded_sqrt


def test_the_square_root_is_the_correctly_rounded_one():
    # Reference: the float64 square root rounded to float32 is the correctly
    # rounded float32 square root (53 >= 2 * 24 + 2 bits, so rounding twice is harmless).
    rng = np.random.default_rng(0)
    values = np.concatenate(
        [
            rng.random(100_005, dtype=np.float32) * np.float32(1e-3),
            rng.random(10_000, dtype=np.float32) * np.float32(1e30),
            np.array([0.0, 1e-45, 1.1754942e-38, 1.0, 4.0, 3.4028235e38], dtype=np.float32),
        ]
    ).reshape(11, -1)
    expected = np.sqrt(values.astype(np.float64)).astype(np.float32)
    got = correctly_rounded_sqrt(torch.from_numpy(values))
    assert got.shape == (11, 10_001) and got.dtype == torch.float32
    assert np.array_equal(got.numpy(), expected)


def test_the_square_root_of_a_zero_dim_tensor_is_a_zero_dim_tensor():
    got = correctly_rounded_sqrt(torch.tensor(2.25))
    assert got.shape == () and got.item() == 1.5


def quadratic_problem(optimizer_class, steps=30, **options):
    torch.manual_seed(0)
    target = torch.randn(40, 30)
    weight = torch.nn.Parameter(torch.zeros(40, 30))
    bias = torch.nn.Parameter(torch.zeros(30))
    frozen = torch.nn.Parameter(torch.ones(3))
    optimizer = optimizer_class([weight, bias, frozen], **options)
    for _ in range(steps):
        optimizer.zero_grad()
        ((weight - target) ** 2).sum().add((bias - 1) ** 2).sum().backward()
        optimizer.step()
    return weight.detach(), bias.detach(), frozen.detach()


@pytest.mark.parametrize("options", [{}, {"lr": 0.05, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1}])
def test_it_makes_torch_adamw_updates(options):
    # Only the square root's last bit may differ from torch's, so the weights
    # agree to float32 rounding after many steps.
    ours = quadratic_problem(PortableAdamW, **options)
    torch_adamw = quadratic_problem(torch.optim.AdamW, foreach=False, **options)
    for got, expected in zip(ours, torch_adamw):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    assert torch.equal(ours[2], torch.ones(3))  # no gradient, no update, no decay


def test_training_steps_move_the_weights_towards_the_optimum():
    weight, bias, _ = quadratic_problem(PortableAdamW, steps=300, lr=0.05, weight_decay=0.0)
    torch.manual_seed(0)
    assert torch.allclose(weight, torch.randn(40, 30), atol=0.05)
    assert torch.allclose(bias, torch.ones(30), atol=0.05)
