"""Captions are encoded only as far as their block's longest one reaches, to the bits of the full context."""

import json
import os
import subprocess
import sys

import numpy as np
import open_clip
import pytest
import torch
import torch.nn.functional as F
from conftest import REPO, collected

from clipeval.features.encode import iter_text_features, prepare_model_for_precision
from clipeval.features.sharding import FORWARD_BLOCK
from clipeval.features.text_span import block_order, causal_text_tower, span, unit_caption_features, vector_lanes
from clipeval.models.build import build_model

WORDS = "a dog cat red blue photo of the on street man riding wave".split()
SMALL_TEXT = {"width": 64, "heads": 1, "layers": 1, "context_length": 77, "vocab_size": 49408}
# Model configs beside clipeval-tiny: a text tower of a real model's proportions (77 positions, heads of 64) at
# a test's cost; the same kind of tower held apart from the model, as open_clip's custom_text configs (EVA's)
# build it (a CustomTextCLIP); and one like SigLIP's, which attends to every position and reads the last.
TOWERS = {
    "span-causal": {"text_cfg": {**SMALL_TEXT, "layers": 2}},
    "span-custom": {"text_cfg": SMALL_TEXT, "custom_text": True},
    "span-bidirectional": {"text_cfg": {**SMALL_TEXT, "no_causal_mask": True, "pool_type": "last"}},
}


def register_towers(folder):
    vision = {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16}
    for name, config in TOWERS.items():
        (folder / f"{name}.json").write_text(json.dumps({"embed_dim": 32, "vision_cfg": vision, **config}))
    open_clip.add_model_config(folder)


@pytest.fixture(scope="module")
def registered(tmp_path_factory):
    folder = tmp_path_factory.mktemp("configs")
    register_towers(folder)
    return folder


def captions_reading_at(read_positions, seed):
    """Captions whose end-of-text tokens fall at these positions (start token, one token a word, end)."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=position - 1)) for position in read_positions]


def blocks_of_every_length(context, seed=0):
    """Captions in blocks whose longest caption reads at every fifth position (so at each place in a vector
    of 8 or 16), and one block with a caption cut at the context."""
    rng = np.random.default_rng(seed)
    captions = []
    for longest in [*range(1, context, 5), context + 5]:
        positions = rng.integers(1, longest + 1, size=FORWARD_BLOCK)
        positions[rng.integers(FORWARD_BLOCK)] = longest
        captions += captions_reading_at(positions, seed + longest)
    return captions


def full_context_features(model, tokenizer, texts):
    """Each block through the model's own encode_text at its whole context, as extraction blocks it."""
    rows = []
    with torch.inference_mode():
        for start in range(0, len(texts), FORWARD_BLOCK):
            tokens = tokenizer(texts[start : start + FORWARD_BLOCK])
            block = torch.cat([tokens, tokens[-1:].expand(FORWARD_BLOCK - len(tokens), -1)])
            rows.append(F.normalize(model.encode_text(block).float(), dim=-1).numpy()[: len(tokens)])
    return np.concatenate(rows)


def blocks_unlike_the_full_context(arch, precision):
    """The longest read position of each block whose extracted features differ from the full context's bits."""
    torch.manual_seed(0)
    model, _, tokenizer = build_model(arch, None)
    texts = blocks_of_every_length(model.context_length)
    ids, features = collected(
        iter_text_features(
            model, tokenizer, np.arange(len(texts)), texts, batch_size=64, device="cpu", precision=precision
        )
    )
    assert ids.tolist() == list(range(len(texts)))
    model, _, autocast = prepare_model_for_precision(model, precision, "cpu")
    with autocast():
        expected = full_context_features(model, tokenizer, texts)
    return sorted(
        {int(tokenizer(texts[row : row + 1]).argmax()) for row in np.flatnonzero((features != expected).any(axis=1))}
    )


# In a process of its own, as a job computes: the numerics profile is pinned before torch is imported.
UNDER_PROFILE = """import json, pathlib, sys
from clipeval.numerics import pin
pin(sys.argv[1])
from test_text_span import blocks_unlike_the_full_context, register_towers
register_towers(pathlib.Path(sys.argv[2]))
cases = [("clipeval-tiny", "fp32"), ("clipeval-tiny", "bf16"), ("clipeval-tiny", "amp"), ("span-causal", "fp32"),
         ("span-custom", "fp32"), ("span-bidirectional", "fp32")]
print(json.dumps({" ".join(case): blocks_unlike_the_full_context(*case) for case in cases}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["portable", "native"])
def test_text_features_are_the_full_context_bits_whatever_the_longest_caption(registered, profile):
    result = subprocess.run(
        [sys.executable, "-c", UNDER_PROFILE, profile, registered],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO / "workflow")])},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.splitlines()[-1]) == {
        "clipeval-tiny fp32": [],
        "clipeval-tiny bf16": [],
        "clipeval-tiny amp": [],
        "span-causal fp32": [],
        "span-custom fp32": [],
        "span-bidirectional fp32": [],
    }


def test_blocks_of_like_length_run_through_the_tower_only_as_far_as_their_longest_caption(registered):
    torch.manual_seed(0)
    model, _, tokenizer = build_model("span-causal", None)
    lengths = []
    model.transformer.register_forward_pre_hook(lambda _, inputs: lengths.append(inputs[0].shape[1]))
    # Short and long captions taking turns: in file order each block would reach the long ones' length.
    read_positions = [3, 20] * FORWARD_BLOCK
    tokens = tokenizer(captions_reading_at(read_positions, seed=1))
    with torch.inference_mode():
        features = unit_caption_features(model, tokens)
    lanes = vector_lanes()
    assert lengths == ([span(torch.tensor([p]), 77, lanes) for p in (3, 20)] if lanes else [77, 77])
    assert features.shape == (len(read_positions), 32)


def test_captions_are_blocked_by_read_position_ties_in_file_order():
    assert block_order(torch.tensor([7, 3, 7, 1, 3])).tolist() == [3, 1, 4, 0, 2]


def test_the_span_reaches_the_last_read_position_in_whole_vectors():
    assert span(torch.tensor([3, 9, 5]), 77, 8) == 16
    assert span(torch.tensor([7]), 77, 8) == 8
    assert span(torch.tensor([8]), 77, 8) == 16
    assert span(torch.tensor([7]), 77, 16) == 16
    assert span(torch.tensor([75]), 77, 8) == 77
    assert span(torch.tensor([0, 0]), 32, 16) == 16


def test_towers_that_attend_to_later_positions_are_encoded_whole(registered):
    model, _, _ = build_model("span-bidirectional", None)
    assert causal_text_tower(model) is None
    assert causal_text_tower(build_model("clipeval-tiny", None)[0]) is not None
    custom, _, _ = build_model("span-custom", None)
    assert type(custom).__name__ == "CustomTextCLIP" and causal_text_tower(custom) is not None
