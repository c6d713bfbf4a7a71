"""Which images each extraction shard holds, and the fixed blocks the model sees. No heavy imports: planning
uses it too."""

from clipeval.errors import ClipevalError


def shard_count(num_images: int, shard_size: int) -> int:
    """Shards of `shard_size` consecutive images; 0 means one shard of everything."""
    return 1 if shard_size == 0 else max(1, -(-num_images // shard_size))


def shard_bounds(num_images: int, shard_index: int, shard_size: int) -> tuple[int, int]:
    """[start, stop) of one shard: a consecutive run of positions in the ascending ids."""
    count = shard_count(num_images, shard_size)
    if not 0 <= shard_index < count:
        layout = (
            f"{num_images} images make {count} shards of {shard_size}"
            if shard_size
            else "without a shard size there is one shard"
        )
        raise ClipevalError(f"shard {shard_index} does not exist: {layout}")
    if shard_size == 0:
        return 0, num_images
    return shard_index * shard_size, min(num_images, (shard_index + 1) * shard_size)


# Images and captions go through the model in blocks of this many, at fixed
# positions of the whole ordered list (features/encode.py says why).
FORWARD_BLOCK = 64


def forward_blocks(start: int, stop: int, total: int, block: int = FORWARD_BLOCK) -> range:
    """Positions where the blocks covering [start, stop) begin.

    The model always sees the same blocks: block b holds positions
    [b·block, (b+1)·block) of the whole ordered item list, the last one
    padded. Kernels round by the shape of their input and by a row's place
    in it, so an item computed in the same block at the same place gives the
    same bits however shards and loader batches fall (docs/REPRODUCIBILITY.md).
    """
    if not 0 <= start <= stop <= total:
        raise ValueError(f"rows [{start}, {stop}) are not within {total} items")
    return range(start // block * block, stop if stop > start else 0, block)


def padded_block(rows):
    """A block's rows (a tensor or an array) with its last row repeated up to FORWARD_BLOCK: only the list's
    final block is short."""
    if len(rows) >= FORWARD_BLOCK:
        return rows
    return rows[list(range(len(rows))) + [len(rows) - 1] * (FORWARD_BLOCK - len(rows))]


def block_span(start: int, stop: int, total: int) -> tuple[int, int]:
    """[first, last): the positions the blocks covering [start, stop) hold, which a shard's job computes."""
    blocks = forward_blocks(start, stop, total)
    return blocks.start, min(total, blocks.start + len(blocks) * FORWARD_BLOCK)


def pixel_shards_read(shard_index: int, shard_size: int, num_images: int) -> range:
    """The pixel shards (laid out like extraction's) that extraction shard `shard_index` reads: its own, and a
    neighbour's where a block straddles the border (a shard size that is not a multiple of the block)."""
    if shard_size == 0:
        return range(1)
    first, last = block_span(*shard_bounds(num_images, shard_index, shard_size), num_images)
    return range(first // shard_size, (last - 1) // shard_size + 1)
