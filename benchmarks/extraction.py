"""Image extraction against the model's forward pass alone, on the CPU or a GPU.

The floor is the model's own work: `encode_image` on the same blocks of 64
images the extraction computes, already decoded and preprocessed, with the
same threads and numerics profile (portable, as the workflow runs by default;
`--numerics native` where the CPU lacks the AVX2 portable needs). Against
it, in images per second: decoding and preprocessing alone (one process),
`iter_image_features` reading the LMDB store with 0 and 2 DataLoader
workers (`--workers` picks others) and reading the pixel stage's stored
pixels, and the whole `clipeval extract-features` process as the workflow's
rule runs it (start, model build and feature files included), from the
images and from stored pixels. A second table times a sweep: `--sweep-models`
models of one preprocessing (ten by default) extracting the same
`--sweep-images` images one job after another, each decoding them itself,
against `clipeval decode-pixels` once and every model reading its pixels.

The images are JPEGs at COCO's usual size (640 × 480), smooth shapes with a
little noise, so they take about as long to decode as photographs; the model
is open_clip's ViT-B-32 with random weights (the speed does not depend on
the weights, and none can be downloaded here).

`--device cuda` measures the same on a GPU (`--precision` as extraction
takes it): the floor is then the forward pass on pixels already on the GPU,
so the ratios show how far decoding, preprocessing and the copy to the GPU
keep it waiting.
"""

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from measure import clipeval_command, exit_status, print_table, run_command

from clipeval.commands._options import PRECISIONS, at_least  # no torch: it must load after pin()

ARCH = "ViT-B-32"
SIZE = (640, 480)


def photo_like_jpeg(index, seed=0):
    """JPEG bytes of a smooth random colour field with fine noise: a photograph's decoding cost, not its looks.
    Each image has a random stream of its own, so that many processes can make a large set."""
    from PIL import Image

    rng = np.random.default_rng([seed, index])
    coarse = Image.fromarray(rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)).resize(SIZE, Image.BICUBIC)
    pixels = np.asarray(coarse, dtype=np.int16) + rng.integers(-12, 13, (SIZE[1], SIZE[0], 3), dtype=np.int16)
    buffer = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def photo_like_jpegs(count, seed=0):
    """photo_like_jpeg(0), …, photo_like_jpeg(count - 1), made in a process per core."""
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    with ProcessPoolExecutor() as pool:
        yield from pool.map(partial(photo_like_jpeg, seed=seed), range(count), chunksize=16)


def images_per_second(count, function):
    start = time.perf_counter()
    function()
    return count / (time.perf_counter() - start)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--images", type=at_least(1), default=256, help="images in the store (a multiple of 64 is fairest)"
    )
    parser.add_argument("--rounds", type=at_least(1), default=2)
    parser.add_argument(
        "--numerics",
        choices=("portable", "native"),
        default="portable",
        help="portable (the workflow's default) needs an AVX2 CPU; native runs anywhere",
    )
    parser.add_argument(
        "--sweep-models", type=at_least(0), default=10, help="models of the sweep table; 0: no sweep table"
    )
    parser.add_argument(
        "--sweep-images", type=at_least(1), default=64, help="images of the sweep (the first of the store's)"
    )
    parser.add_argument("--device", default="cpu", help="cpu, or cuda / cuda:N")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32", help="fp16 needs a GPU")
    parser.add_argument(
        "--batch-size",
        type=at_least(1),
        default=256,
        help="images a loader worker prepares at a time: the images over it must exceed the workers"
        " for all of them to be busy",
    )
    parser.add_argument(
        "--workers",
        type=at_least(0),
        nargs="+",
        default=[0, 2],
        help="DataLoader worker counts to measure; the whole process runs with the largest",
    )
    args = parser.parse_args(argv)

    from clipeval.numerics import pin

    threads = pin(args.numerics)  # before torch is imported, as extract-features does
    import open_clip
    import torch

    from clipeval.data.image_lmdb import ImageStore, write_image_store
    from clipeval.features.encode import FORWARD_BLOCK, iter_image_features, prepare_model_for_precision
    from clipeval.features.pixel_files import PIXELS, open_stored_pixels
    from clipeval.features.pixels import model_recipe
    from clipeval.models.build import build_model, resolve_device

    device = resolve_device(args.device)  # a GPU torch does not see ends here, in one line
    on_gpu = torch.device(device).type == "cuda"
    where = f"{torch.cuda.get_device_name(torch.device(device))}" if on_gpu else "CPU"
    model, transform, _ = build_model(ARCH, None, device=device)
    model.eval()
    # Before the images are made: a precision the device cannot run (fp16 on the CPU) stops here.
    floor_model, input_dtype, autocast = prepare_model_for_precision(model, args.precision, device)

    def finished():
        if on_gpu:
            torch.cuda.synchronize(device)

    with tempfile.TemporaryDirectory() as workdir:
        store_path = Path(workdir) / "images.lmdb"
        write_image_store(store_path, enumerate(photo_like_jpegs(args.images)))
        store = ImageStore(store_path)
        image_ids = store.image_ids()

        def preprocess_all():
            return torch.stack([transform(store.image(int(image_id))) for image_id in image_ids])

        rates = {"decode and preprocess alone, one process": images_per_second(len(image_ids), preprocess_all)}
        pixels = preprocess_all().to(device, dtype=input_dtype)

        def forward_only():
            with torch.inference_mode(), autocast():
                for start in range(0, len(pixels), FORWARD_BLOCK):
                    floor_model.encode_image(pixels[start : start + FORWARD_BLOCK])
            finished()

        forward_only()  # warm up: first calls allocate and pick kernels

        recipe = model_recipe(open_clip.get_model_preprocess_cfg(model), transform)
        pixel_folder = Path(workdir) / "pixels"
        decode_command = clipeval_command(
            "decode-pixels",
            "--images",
            store_path,
            "--recipe",
            recipe,
            "--num-workers",
            max(args.workers),
            "--output",
            pixel_folder,
        )
        decode_seconds, _ = run_command(decode_command, repeats=1)
        rates[f"decode-pixels, whole process, {max(args.workers)} loader workers"] = len(image_ids) / decode_seconds
        stored = open_stored_pixels([pixel_folder], recipe, image_ids)
        pixel_bytes = (pixel_folder / PIXELS).stat().st_size

        def extract(workers, pixels=None):
            for _ in iter_image_features(
                model,
                transform,
                store,
                image_ids,
                batch_size=args.batch_size,
                num_workers=workers,
                device=device,
                precision=args.precision,
                pixels=pixels,
            ):
                pass
            finished()

        command = clipeval_command(
            "extract-features",
            "--arch",
            ARCH,
            "--images",
            store_path,
            "--image-output",
            Path(workdir) / "f.jsonl",
            "--batch-size",
            args.batch_size,
            "--num-workers",
            max(args.workers),
            "--device",
            device,
            "--precision",
            args.precision,
            "--numerics",
            args.numerics,
        )
        from_pixels_command = [*command, "--pixels", pixel_folder]
        whole_from_images = f"extract-features, whole process, {max(args.workers)} loader workers"
        whole_from_pixels = "extract-features, whole process, from stored pixels"
        peak_of = {}

        def whole_process(what, command):
            seconds, peak = run_command(command, repeats=1)
            peak_of[what] = max(peak_of.get(what, 0), peak)
            return len(image_ids) / seconds

        # The machine's speed varies between minutes (docs/BENCHMARKS.md): the rounds interleave every
        # measurement, and each keeps its fastest round.
        rounds = {}
        for _ in range(args.rounds):
            for what, measure in (
                ("floor", lambda: images_per_second(len(image_ids), forward_only)),
                *(
                    (
                        f"iter_image_features, {workers} loader workers",
                        lambda workers=workers: images_per_second(len(image_ids), lambda: extract(workers)),
                    )
                    for workers in args.workers
                ),
                (
                    "iter_image_features, from stored pixels",
                    lambda: images_per_second(len(image_ids), lambda: extract(0, stored)),
                ),
                (whole_from_images, lambda: whole_process(whole_from_images, command)),
                (whole_from_pixels, lambda: whole_process(whole_from_pixels, from_pixels_command)),
            ):
                rounds.setdefault(what, []).append(measure())
        floor = max(rounds.pop("floor"))
        rates.update({what: max(values) for what, values in rounds.items()})
        if args.sweep_models:
            sweep_store = Path(workdir) / "sweep.lmdb"
            write_image_store(sweep_store, enumerate(photo_like_jpegs(min(args.sweep_images, args.images))))

            def on_sweep_store(words):
                swapped = {str(store_path): sweep_store, str(pixel_folder): Path(workdir) / "sweep-pixels"}
                return [swapped.get(str(word), word) for word in words]

            sweep = sweep_seconds(
                args.sweep_models, *map(on_sweep_store, (decode_command, command, from_pixels_command))
            )

    rows = [["forward pass alone (floor)", f"{floor:.1f}", "1.00", ""]]
    for what, rate in rates.items():
        peak_cell = f"{peak_of[what]:,.0f}" if what in peak_of else ""
        rows.append([what, f"{rate:.1f}", f"{rate / floor:.2f}", peak_cell])
    print_table(
        f"image extraction, {ARCH}, {len(image_ids)} JPEGs of {SIZE[0]} × {SIZE[1]}, {where},"
        f" {args.precision}, {threads} torch threads, {args.numerics} numerics",
        ["what", "images/s", "× floor", "peak MiB"],
        rows,
    )
    print(
        f"\nStored pixels of recipe {recipe}: {pixel_bytes / len(image_ids) * 1000 / 1e6:.1f} MB per 1,000 images.",
        flush=True,
    )
    if args.sweep_models:
        without, decode, reading = sweep
        print_table(
            f"a sweep: {args.sweep_models} models of one preprocessing extract the same"
            f" {min(args.sweep_images, args.images)} images,"
            f" {where}, {args.precision}, one job after another",
            ["how", "wall s", "× each decoding"],
            [
                ["each model decodes the images itself", f"{without:.1f}", "1.00"],
                [
                    f"decode-pixels once ({decode:.1f} s), every model reads the pixels",
                    f"{decode + reading:.1f}",
                    f"{(decode + reading) / without:.2f}",
                ],
            ],
        )


def sweep_seconds(models, decode_command, command, from_pixels_command):
    """(seconds of `models` extractions from the images, of one decode-pixels, of `models` extractions from
    its pixels): whole processes, one after another, as the workflow's jobs on one machine."""
    without = sum(run_command(command, repeats=1)[0] for _ in range(models))
    decode = run_command(decode_command, repeats=1)[0]
    reading = sum(run_command(from_pixels_command, repeats=1)[0] for _ in range(models))
    return without, decode, reading


if __name__ == "__main__":
    sys.exit(exit_status(main))
