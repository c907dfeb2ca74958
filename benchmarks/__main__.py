"""``python -m benchmarks``: the benchmark suite (see :mod:`benchmarks.run`)."""
import sys

from benchmarks.run import main

sys.exit(main())
