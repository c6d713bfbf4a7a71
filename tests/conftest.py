import os
import subprocess
import sys

import pytest
from hypothesis import settings

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]

# The suite runs two workers, each starting jobs that compute with two
# threads, on as few as two cores. OpenMP threads that wait actively for the
# rest of their team then spin on cores that the other worker's threads need;
# scripts/measure_wait_policy.py shows the cost (README, "Development"). How
# threads wait changes no result.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Property tests draw the same examples on every machine and every run: a
# failure is then the code's, reproducible anywhere, never a lucky draw.
settings.register_profile("clipeval", derandomize=True, database=None)
settings.load_profile("clipeval")


def run_cli(*args, cwd=None):
    """Run `python -m clipeval ARGS` as a user would; return the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "clipeval", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
    )


@pytest.fixture(scope="session")
def shapes_dataset(tmp_path_factory):
    """A small prepared shapes dataset: 40 images, 200 captions."""
    from clipeval.data.dataset import write_dataset
    from clipeval.data.sources import PreparedSource
    from clipeval.data.sources.shapes import generate_shapes

    out = tmp_path_factory.mktemp("shapes") / "small"
    images, captions, _ = generate_shapes(40, seed=5, first_image_id=10)
    write_dataset(out, PreparedSource(images, captions, {"format": "shapes"}))
    return out


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    """A randomly initialised clipeval-tiny checkpoint in open_clip's format."""
    import open_clip
    import torch

    import clipeval.models.build  # noqa: F401  registers clipeval-tiny

    torch.manual_seed(0)
    model = open_clip.create_model("clipeval-tiny")
    path = tmp_path_factory.mktemp("weights") / "tiny.pt"
    torch.save({"state_dict": model.state_dict()}, path)
    return path
