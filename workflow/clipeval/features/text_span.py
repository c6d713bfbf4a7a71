"""Encode a block of captions only as far as its longest caption reaches, to the bits of the full context.

open_clip's causal text towers (CLIP's own, and a TextTransformer with a
causal mask that reads each caption's feature at its end-of-text token)
compute every position of the context, 77 for most models, though a
caption's feature is read at its end-of-text token and the causal mask lets
no position see a later one. The positions after the block's last
end-of-text token change nothing a feature depends on; captions are a fifth
of the context or less, so stopping there leaves a fraction of the work.

The bits stay those of the full context when the cut is a multiple of the
vector width of the kernels that sum over positions: a masked position then
enters attention's sums as an exact zero in the same lane as at the full
context, and every other operation works on each position alone. Under the
portable profile every library runs AVX2 kernels or narrower (8 float32
lanes); natively MKL and oneDNN may run AVX-512 ones (16), and a cut of 8
there was seen to change the last bits. tests/test_text_span.py holds
extraction to the full context's bits under both profiles, in fp32, bf16
and amp, for blocks whose longest caption ends at every place in a vector.
Only x86-64 CPUs take the cut, where that was seen; elsewhere,
and for every other text tower, a block is encoded at the full context, as
the model's own encode_text does.

Where the cut is taken, a block is made of captions of like length: the
captions of each window of WINDOW are put in order of their read position
(ties in file order) before they are cut into blocks, so that one long
caption does not carry 63 short ones to its length. The blocks depend on
the caption file alone, as file-order blocks do; which block a caption
lands in was not seen to change its bits (the same test holds extraction
to the full context's blocks in file order). The window bounds what is held.
"""

from dataclasses import dataclass

import open_clip
import torch
import torch.nn.functional as F

from clipeval.features.sharding import FORWARD_BLOCK, padded_block
from clipeval.numerics import portable_pinned

# The x86-64 code paths torch reports, whose vector kernels the cut was seen to keep the bits of.
X86_CAPABILITIES = ("AVX2", "AVX512")
PORTABLE_LANES = 8
NATIVE_LANES = 16
# Captions put in order of length together: 64 blocks, a few megabytes of tokens and features.
WINDOW = 64 * FORWARD_BLOCK


@dataclass(frozen=True)
class CausalTextTower:
    """The parts of an open_clip text tower that encode_text runs, in its order."""

    token_embedding: torch.nn.Module
    positional_embedding: torch.Tensor
    transformer: torch.nn.Module
    attn_mask: torch.Tensor
    ln_final: torch.nn.Module
    text_projection: object
    pool_type: str
    eos_id: int | None

    def read_positions(self, tokens: torch.Tensor) -> torch.Tensor:
        """The position each row's feature is read at, as open_clip's text_global_pool finds it."""
        if self.pool_type == "argmax":
            return tokens.argmax(dim=-1)
        return (tokens == self.eos_id).int().argmax(dim=-1)

    def encode(self, tokens: torch.Tensor) -> torch.Tensor:
        """open_clip's encode_text on `tokens`, which may be shorter than the context."""
        length = tokens.shape[1]
        cast_dtype = self.transformer.get_cast_dtype()
        x = self.token_embedding(tokens).to(cast_dtype)
        x = x + self.positional_embedding[:length].to(cast_dtype)
        x = self.transformer(x, attn_mask=self.attn_mask[:length, :length])
        x = self.ln_final(x)
        x = x[torch.arange(len(tokens), device=x.device), self.read_positions(tokens)]
        if self.text_projection is None:
            return x
        if isinstance(self.text_projection, torch.nn.Linear):
            return self.text_projection(x)
        return x @ self.text_projection


def causal_text_tower(model) -> CausalTextTower | None:
    """The model's text tower if it is one whose later positions a feature does not depend on, else None."""
    if isinstance(model, open_clip.model.CLIP):
        parts, pool_type, eos_id = model, model.text_pool_type, getattr(model, "text_eos_id", None)
    elif isinstance(model, open_clip.model.CustomTextCLIP) and isinstance(
        model.text, open_clip.transformer.TextTransformer
    ):
        parts, pool_type, eos_id = model.text, model.text.pool_type, model.text.eos_id
        if model.text.cls_emb is not None or model.text.use_pad_mask:
            return None
    else:
        return None
    if parts.attn_mask is None or pool_type not in ("argmax", "eos") or (pool_type == "eos" and eos_id is None):
        return None
    return CausalTextTower(
        parts.token_embedding,
        parts.positional_embedding,
        parts.transformer,
        parts.attn_mask,
        parts.ln_final,
        parts.text_projection,
        pool_type,
        eos_id,
    )


def span(read_positions: torch.Tensor, context: int, lanes: int) -> int:
    """How many positions a block needs: through its last read position, up to a multiple of `lanes`."""
    needed = int(read_positions.max()) + 1
    return min(context, -(-needed // lanes) * lanes)


def vector_lanes() -> int | None:
    """The cut's multiple on this code path: None where the cut is not taken."""
    if torch.backends.cpu.get_cpu_capability() not in X86_CAPABILITIES:
        return None
    return PORTABLE_LANES if portable_pinned() else NATIVE_LANES


def block_order(read_positions: torch.Tensor) -> torch.Tensor:
    """The rows in the order they are cut into blocks: by read position, ties in their own order."""
    return torch.sort(read_positions, stable=True).indices


def unit_caption_features(model, tokens: torch.Tensor) -> torch.Tensor:
    """The float32 unit features of every row of `tokens` (at most WINDOW), in row order: model.encode_text's
    bits, computed and normalised in blocks of FORWARD_BLOCK as images are. Where the cut keeps the bits, the
    blocks are of captions of like length, each cut after its longest caption; elsewhere they are the rows in
    order, at the whole context."""
    tower = causal_text_tower(model)
    lanes = vector_lanes()
    if tower is None or lanes is None or tokens.device.type != "cpu":
        order = torch.arange(len(tokens), device=tokens.device)

        def encode(rows):
            return model.encode_text(padded_block(tokens[rows]))
    else:
        read_positions = tower.read_positions(tokens)
        order = block_order(read_positions)

        def encode(rows):
            # The padding repeats a row of the block, so the block's rows decide its span.
            return tower.encode(padded_block(tokens[rows])[:, : span(read_positions[rows], tokens.shape[1], lanes)])

    features = None
    for rows in order.split(FORWARD_BLOCK):
        unit = F.normalize(encode(rows).float(), dim=-1)[: len(rows)]
        if features is None:
            features = unit.new_empty((len(tokens), unit.shape[1]))
        features[rows] = unit
    return features
