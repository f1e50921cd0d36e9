"""tests/bench/bench.py's modes, one module each, over one harness.

  harness   node 0's hugepages, the helper binaries, hpwarmd and its
            requests, the statistics and table lines the reports share
  core      the default: the warm against populate_ideal and QEMU, latency
            and RSS, then the in-place recycle and priority phases
  qemu      the core mode's QEMU rows: (c), (d) and the guest boot (e)
  recycle   recycle_bench's rows (core and 1G modes) and recycling through
            the daemon (--stock-only)
  prio      prio_bench's rows (core mode)
  stock     --stock-only: time to ready from stock against a cold warm
  gigantic  --page-size 1G
  scale     --scale [N]
  busy      --busy-host N
  longrun   --soak MINUTES and --faults, handed to tests/real

A mode module imports the harness (and the phase modules it runs) and
never another mode; bench.py parses the command line and picks the mode
from its MODES table.  Each mode's module docstring says what it measures."""
