"""A throw-away PostgreSQL server for tests and benchmarks: real, never a mock.

``initdb`` makes a cluster in a fresh temporary folder and ``pg_ctl`` starts it
listening on a Unix socket in that folder only (no TCP port, so parallel runs
cannot collide and nothing is reachable from outside). PostgreSQL refuses to
run as root, and CI runs as root: then the folder is given to Debian's
``postgres`` user and every server command runs through ``runuser -u postgres``.
``stop`` shuts the server down and removes the folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

#: Where Debian's PostgreSQL 15 server binaries are (.ci/run installs them).
PG_BIN_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin")
SERVER_USER = "postgres"


def find_bin_dir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or None when they are absent."""
    for folder in (os.environ.get("PMOS_PG_BIN"), *PG_BIN_DIRS):
        if folder and (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).resolve().parent
    return None


class PgServer:
    """One running cluster; ``dsn(dbname)`` connects to it over its socket as the superuser."""

    def __init__(self, bin_dir: Path, settings: dict[str, str] | None = None) -> None:
        self.bin_dir = bin_dir
        self.as_root = os.geteuid() == 0
        # /tmp, not $TMPDIR: the server user must reach the folder, and the socket
        # path must stay short (at most 107 bytes).
        self.folder = Path(tempfile.mkdtemp(prefix="pmos-pg-", dir="/tmp"))
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self.superuser = SERVER_USER if self.as_root else _current_user()
        if self.as_root:
            shutil.chown(self.folder, SERVER_USER, SERVER_USER)
        options = {
            "listen_addresses": "''",
            "unix_socket_directories": f"'{self.folder}'",
            "max_connections": "60",
            **(settings or {}),
        }
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            self.superuser,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        opts = " ".join(f"-c {k}={v}" for k, v in options.items())
        try:
            self._run(
                "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w", "start"
            )
        except subprocess.CalledProcessError:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            self.stop()
            raise RuntimeError(f"PostgreSQL did not start:\n{log}") from None

    def _run(self, tool: str, *args: str) -> None:
        argv = [str(self.bin_dir / tool), *args]
        if self.as_root:
            argv = ["runuser", "-u", SERVER_USER, "--", *argv]
        subprocess.run(argv, check=True, capture_output=True, text=True, timeout=120)

    def dsn(self, dbname: str = "postgres", user: str | None = None) -> str:
        return f"host={self.folder} dbname={dbname} user={user or self.superuser}"

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(subprocess.CalledProcessError):
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)


def _current_user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name
