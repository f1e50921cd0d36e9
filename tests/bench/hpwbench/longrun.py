"""The two modes that are not timings (--soak MINUTES, --faults): each
hands the process over to its script in tests/real under guard.sh, with
hpwarmd named by $HPWARMD, and never returns."""
import os
import sys

from .harness import GUARD, REPO


def exec_under_guard(ap, args, script, argv):
    if not os.access(args.hpwarmd, os.X_OK):
        ap.error("%s is not built (cmake --build %s)" % (args.hpwarmd, args.build))
    os.environ["HPWARMD"] = os.path.abspath(args.hpwarmd)
    os.execv(GUARD, [GUARD, sys.executable, os.path.join(REPO, "tests", "real", script)] + argv)


def faults(ap, args):
    """The full fault-injection sweep (tests/real/fault_sweep.py --full)."""
    exec_under_guard(ap, args, "fault_sweep.py", ["--full"])


def soak(ap, args):
    """The randomized churn with kill -9 restarts (tests/real/soak.py) for
    args.soak minutes."""
    if args.soak <= 0:
        ap.error("--soak wants a positive number of minutes")
    exec_under_guard(ap, args, "soak.py", ["--minutes", str(args.soak)])
