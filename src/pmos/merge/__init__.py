"""The merge decision: whether a change (base..head) may merge, judged by the base's rules.

``pmos gate`` is the one command a team puts in a required CI check. Its
policy is read from the base revision's objects (:mod:`pmos.merge.kitfiles`),
its records from both revisions' objects (:mod:`pmos.store.revision`), and
its decision (:mod:`pmos.merge.decision`) lists every reason a change may not
merge. ``pmos sync`` takes the kit's policy the same way, from the default
branch (:mod:`pmos.merge.committed`). Nothing but the CLI imports this package.
"""
