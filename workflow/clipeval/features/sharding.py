"""Which images each extraction shard holds. No heavy imports: planning uses it too."""

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
