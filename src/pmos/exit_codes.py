"""Process exit codes, named once so the CLI and its tests agree on them."""

OK = 0
#: A check ran and found a problem: verification debt, a broken chain, a failed assessment.
CHECK_FAILED = 1
#: The input or the invocation was wrong; nothing was written.
BAD_INPUT = 2
#: The user pressed Ctrl-C.
INTERRUPTED = 130
