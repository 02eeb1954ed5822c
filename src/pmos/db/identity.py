"""A kit's stable identity: the same kit id from every clone of its repository.

A kit lives in a git repository (a product's ``pmos/`` folder, or a kit
repository of its own). Its id is the repository's remote URL, normalised,
and the kit's folder inside the repository::

    github.com/acme/shop#pmos        a kit vendored at shop/pmos
    github.com/acme/kit#.            a kit at the repository's root

Two clones of one repository, on two machines or in two CI jobs, name the
same remote and the same folder, so their syncs land in one kit and their
records (the same records, by digest) are stored once. The URL is normalised
so that the ssh and https forms of one remote agree and no credential written
into a remote URL ever reaches the database. The remote is ``origin``, or the
only remote when there is one. A kit outside git, or without a remote, is
named explicitly (``pmos sync --kit-id ID``); the id chosen must then be used
from every clone.

An id names a kit; it does not prove that a repository is that kit (any
repository can set its remote to another's URL). What may write a kit's rows
is the database role bound to it by ``pmos db grant --kit ID``
(:mod:`pmos.db.roles`): a sync with that role under any other id is refused.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

from pmos.db.gitread import git_line, toplevel
from pmos.errors import BadInput

#: A kit id is printable text without control characters, at most this long.
MAX_KIT_ID = 500
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: ``user@host:path`` (scp-like syntax), not ``C:\\path`` or ``./a:b``.
_SCP = re.compile(r"^(?:[^@/]+@)?([A-Za-z0-9.\-]{2,}):(?!//)(.+)$")
_DEFAULT_PORTS = {"https": 443, "http": 80, "ssh": 22, "git": 9418}


class KitIdentity(NamedTuple):
    kit_id: str
    repository: str | None
    path: str | None


def check_kit_id(kit_id: str) -> str:
    """A kit id given by hand, refused when empty, too long or with control characters."""
    if not kit_id.strip():
        raise BadInput("--kit-id: a kit id cannot be empty")
    if len(kit_id) > MAX_KIT_ID:
        raise BadInput(f"--kit-id: at most {MAX_KIT_ID} characters; got {len(kit_id)}")
    if _CONTROL.search(kit_id):
        raise BadInput("--kit-id: control characters are not allowed in a kit id")
    return kit_id


def kit_identity(root: Path, explicit: str | None = None) -> KitIdentity:
    """The identity of the kit at ``root`` (see the module docstring)."""
    repo = toplevel(root)
    repository = path = None
    if repo is not None:
        path = root.resolve().relative_to(repo).as_posix() or "."
        url = _remote_url(repo)
        if url is not None:
            repository = normalise_remote(url, repo)
    if explicit is not None:
        return KitIdentity(check_kit_id(explicit), repository, path)
    if repo is None:
        raise BadInput(
            f"the kit at {root} is not inside a git repository, so it has no stable id: "
            "pass --kit-id ID (and use the same id from every copy of the kit)"
        )
    if repository is None:
        raise BadInput(
            f"the repository at {repo} has no remote (or several and none is 'origin'), so "
            "the kit has no stable id: add the remote ('git remote add origin URL') or pass "
            "--kit-id ID"
        )
    return KitIdentity(f"{repository}#{path}", repository, path)


def normalise_remote(url: str, repo: Path) -> str:
    """``git@github.com:Acme/shop.git`` and ``https://user:pw@github.com/Acme/shop`` both
    become ``github.com/Acme/shop``; a local path becomes ``file:`` and its absolute path."""
    url = url.strip()
    if "://" in url:
        parts = urlsplit(url)
        path = parts.path
        if parts.scheme == "file":
            return _local(Path(path), repo)
        host = (parts.hostname or "").lower()
        try:
            port = parts.port
        except ValueError:
            port = None
        if port is not None and port != _DEFAULT_PORTS.get(parts.scheme):
            host = f"{host}:{port}"
        return f"{host}/{_clean_path(path)}"
    scp = _SCP.match(url)
    if scp:
        return f"{scp.group(1).lower()}/{_clean_path(scp.group(2))}"
    return _local(Path(url), repo)


def _local(path: Path, repo: Path) -> str:
    """A remote on this machine: ``file:`` and its absolute path, without ``.git``."""
    absolute = (path if path.is_absolute() else repo / path).resolve()
    return "file:/" + _clean_path(absolute.as_posix())


def _clean_path(path: str) -> str:
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    return path.rstrip("/") if path else path


def _remote_url(repo: Path) -> str | None:
    url = git_line(repo, "config", "--get", "remote.origin.url")
    if url:
        return url
    remotes = (git_line(repo, "remote") or "").split()
    if len(remotes) == 1:
        return git_line(repo, "config", "--get", f"remote.{remotes[0]}.url") or None
    return None
