"""Team scale on PostgreSQL: many kits in one database, with the same numbers.

File mode stays the default; this package is used only when a command is
given a database (``pmos sync``, ``pmos db migrate``, ``pmos metrics --db``,
``pmos queue --db``). It needs the ``postgres`` extra (psycopg 3), imported
only here and only when a database is used.

* :mod:`pmos.db.connect` turns a DSN into a connection and database errors
  into pmos errors;
* :mod:`pmos.db.migrate` applies the versioned SQL files in ``migrations/``;
* :mod:`pmos.db.identity` names a kit the same way from every clone;
* :mod:`pmos.db.sync` copies a kit's records in, by digest, in one transaction;
* :mod:`pmos.db.readings` and :mod:`pmos.db.queue` build from SQL the same
  per-run inputs the file readers build and hand them to
  :mod:`pmos.calibration`, so both modes share every statistic;
* :mod:`pmos.db.roles` grants the least privileges a syncing or a reading
  role needs.
"""
