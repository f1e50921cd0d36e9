"""The end every check script shares: each finding printed as a FAIL line,
then exit 1, or one "ok:" line saying what held and exit 0.  Imported by
tests/check_test_labels.py, tests/api/test_openapi.py and
docs/check_architecture.py (each puts tests/ on sys.path)."""


def finish(errors, ok):
    """Print ERRORS (or OK when there are none); the exit code for main()."""
    for e in errors:
        print("FAIL:", e)
    if errors:
        return 1
    print("ok:", ok)
    return 0
