"""`make bench`: every benchmark, one table each, after the machine they ran on."""

import feature_io
import knn
import sweep
from measure import machine

if __name__ == "__main__":
    print(f"Machine: {machine()}")
    knn.main([])
    feature_io.main([])
    sweep.main([])
