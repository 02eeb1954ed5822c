"""Process exit codes, named once so the CLI and its tests agree on them."""

OK = 0
#: A check ran and found a problem: verification debt, a broken chain, a failed assessment.
CHECK_FAILED = 1
#: The input or the invocation was wrong; nothing was written.
BAD_INPUT = 2
#: pmos itself failed (a bug): the traceback is printed. Distinct from 1 and 2 on purpose.
INTERNAL_ERROR = 70
#: A ledger stayed locked by another writer for too long; nothing was written, retry.
TEMPORARY_FAILURE = 75
#: The system could not store or read what pmos asked of it (a full disk, a quota,
#: a read-only file system, an I/O error): the input was fine; free space and retry.
#: (BSD sysexits' EX_IOERR.)
SYSTEM_ERROR = 74
#: The system refused pmos a file or folder (no permission): the input was fine;
#: fix the permissions and retry. (BSD sysexits' EX_NOPERM.)
NO_PERMISSION = 77
#: The user pressed Ctrl-C.
INTERRUPTED = 130
#: Whatever read the output stopped reading (as ``head`` does once it has its lines):
#: the rest is not printed. What the command wrote before printing stays written.
OUTPUT_CLOSED = 141
