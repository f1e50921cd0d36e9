"""The priority phase of the core mode (prio_bench, after the daemon has
stopped): the real engine; a populate of SIZE alone (p0), beside a
low-priority zero job of SIZE/2 that is already running (p1), beside the
same at normal priority (p2, contrast), and the zero job alone (z), its own
interleaved rounds after an untimed warm-up round."""
from .harness import log, median, paired, per_round_line, run_helper

# A populate beside a low-priority zero job: at most this much slower than
# alone.
TARGET_LOW_SLOWDOWN = 1.10


def measure(args, mnt):
    pr = run_helper("prio_bench", [args.prio_bench, mnt, str(args.size), str(args.threads), str(args.rounds)])
    log("priority: populate alone %.3fs, beside low-priority zero %.3fs (medians)" % (
        median(pr["alone"]), median(pr["beside_low"])))
    return pr


def report(pr, rows, extra, checks, notes):
    """Appends to the core report's ROWS, EXTRA (rows of another size),
    CHECKS and NOTES."""
    rows.append(("(p0) engine populate alone (submit..on_done)", median(pr["alone"])))
    rows.append(("(p1) the same beside a low-priority zero job", median(pr["beside_low"])))
    rows.append(("(p2) the same beside a normal-priority zero job", median(pr["beside_normal"])))
    extra.append(("(z) engine zero job alone, low priority (%s)" % pr["zero_routine"],
                  median(pr["zero_alone"]), pr["zero_size_bytes"]))
    checks.append(("(p1)/(p0) populate slowed by a low-priority zero job",
                   paired(pr["alone"], pr["beside_low"]), TARGET_LOW_SLOWDOWN, "<="))
    notes.append("(p2)/(p0), what priority saves: %.2fx; rounds whose zero job ended before "
                 "the populate was submitted: %d" % (paired(pr["alone"], pr["beside_normal"]), pr["zero_restarts"]))


def per_round(pr):
    """The report's line of prio_bench's per-round seconds; none without
    results PR."""
    if not pr:
        return []
    return [per_round_line("priority ", {k: pr[k] for k in ("alone", "beside_low", "beside_normal", "zero_alone")})]
