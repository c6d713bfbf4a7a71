"""`make bench`: every benchmark, one table each, after the machine they ran on."""

import extraction
import feature_io
import knn
import knn_settings
import scoring
import sweep
from measure import machine

if __name__ == "__main__":
    print(f"Machine: {machine()}")
    extraction.main([])  # first: it pins torch's numerics, which must happen before anything imports torch
    knn.main([])
    knn_settings.main([])
    feature_io.main([])
    scoring.main([])
    sweep.main([])
