"""The one way pmos runs git: hardened, bounded in time, confined to one repository.

Whatever pmos reads from git (a revision's ledgers, the trust files a merge is
judged by) is read through :class:`Repository`, which:

* passes a fixed safe configuration on every call, so nothing the repository
  configures runs: no fsmonitor hook, no hooks, no external diff, no pager, no
  ssh command, and no network protocol at all (``protocol.allow=never``), so a
  partial clone's missing object is an error, never a lazy fetch;
* runs with an environment without any ``GIT_*`` variable of the caller's
  (``GIT_DIR`` cannot point it elsewhere), without the system configuration,
  with prompts and lazy fetching off;
* stops a command after a timeout;
* refuses a git directory that lies outside the repository holding the path it
  was given: a ``.git`` *file* pointing at another repository, or a linked
  worktree whose objects live elsewhere. A subfolder of an ordinary repository
  is fine;
* turns a missing revision or object into :class:`pmos.errors.GitError`.

Most callers read objects only (``rev-parse``, ``ls-tree``, ``cat-file``,
``merge-base``, ``log``); a blob may come from the checkout instead, when the
file there hashes to the blob's id (:meth:`Repository.blobs`). A command that
reads the *work tree* (``status``, ``diff`` against it; ``pmos assess`` does)
is run with ``work_tree=True``: every filter driver the repository names is
blanked for it (:meth:`Repository.run`), so no clean or smudge command runs
either. Commands that would diff get
``--no-ext-diff --no-textconv`` from :data:`NO_DRIVERS`.

This is the only module of pmos that starts git on a repository it reads.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from pmos.errors import GitError

#: ``-c`` settings on every call: what a repository could otherwise make git run.
SAFE_CONFIG = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.sshCommand=false",
    "core.askPass=false",
    "core.untrackedCache=false",
    "diff.external=",
    "protocol.allow=never",
    "submodule.recurse=false",
    "credential.helper=",
    "log.showSignature=false",
    "gpg.program=false",
    "gpg.ssh.program=false",
)
#: For any command that could show a diff: no external diff driver, no textconv.
NO_DRIVERS = ("--no-ext-diff", "--no-textconv")
#: Variables git reads that pmos sets; every other GIT_* of the caller's is dropped.
SAFE_ENV = {
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_ASKPASS": "false",
    "SSH_ASKPASS": "false",
    "LC_ALL": "C",
}
TIMEOUT_S = 120.0


class _NotInWorkTree(GitError):
    """The path is in no git work tree (or git is missing): see :meth:`Repository.find`."""


class TreeEntry(NamedTuple):
    """One file of a revision's tree (``git ls-tree -r``)."""

    mode: str
    kind: str
    sha: str
    path: str


def _environment(overrides: tuple[tuple[str, str], ...] = ()) -> dict[str, str]:
    """The caller's environment without its GIT_* variables, plus :data:`SAFE_ENV`;
    ``overrides`` are passed as GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n, which take
    any key (a filter named ``a=b`` would break ``-c``) and win over every file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(SAFE_ENV)
    if overrides:
        env["GIT_CONFIG_COUNT"] = str(len(overrides))
        for i, (key, value) in enumerate(overrides):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def _run(
    cwd: Path,
    args: list[str],
    data: bytes | None,
    timeout: float,
    overrides: tuple[tuple[str, str], ...] = (),
    *,
    spool: bool = False,
) -> bytes:
    """Run git; its output. With ``spool`` the output goes to a temporary file, read
    once git is done: for tens of megabytes (a revision's ledgers) a pipe makes git
    wait for this process at every 64 KB, and on a busy machine each wait is a turn
    of the scheduler."""
    command = ["git", "--no-pager"]
    for setting in SAFE_CONFIG:
        command += ["-c", setting]
    command += ["-C", str(cwd), *args]
    with tempfile.TemporaryFile() if spool else contextlib.nullcontext() as sink:
        try:
            done = subprocess.run(
                command,
                input=data,
                stdin=None if data is not None else subprocess.DEVNULL,
                stdout=sink if sink is not None else subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_environment(overrides),
                timeout=timeout,
                check=False,
            )
        except FileNotFoundError:
            raise _NotInWorkTree("git is not installed (pmos reads revisions with git)") from None
        except subprocess.TimeoutExpired:
            raise GitError(
                f"git {args[0]} took longer than {timeout:g} s and was stopped"
            ) from None
        if done.returncode:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git {args[0]}: {message[-1] if message else 'failed'}")
        if sink is None:
            return bytes(done.stdout)
        sink.seek(0)
        return sink.read()


class Repository:
    """A git repository that holds a given path, checked to be its own.

    ``top`` is the work tree's root; every command runs there unless ``here`` asks
    for ``start``, the folder of the path it was given (inside ``top``).
    """

    __slots__ = ("_blanked", "git_dir", "start", "timeout", "top")

    def __init__(self, path: Path, *, timeout: float = TIMEOUT_S) -> None:
        self.timeout = timeout
        self._blanked: tuple[tuple[str, str], ...] | None = None
        where = Path(os.path.realpath(path))
        if not where.is_dir():
            where = where.parent
        self.start = where
        try:
            out = _run(where, ["rev-parse", "--show-toplevel", "--absolute-git-dir"], None, timeout)
        except GitError as exc:
            raise _NotInWorkTree(f"{path} is not inside a git work tree ({exc})") from None
        top_text, git_dir_text = out.decode("utf-8", "surrogateescape").splitlines()[:2]
        self.top = Path(os.path.realpath(top_text))
        self.git_dir = Path(os.path.realpath(git_dir_text))
        own = self.top / ".git"
        if os.path.islink(own) or not own.is_dir() or self.git_dir != own:
            raise GitError(
                f"refusing the git directory {self.git_dir} of {path}: it is not the "
                f"repository's own {own} folder (a .git file or a worktree pointing "
                "elsewhere); run pmos in the repository itself"
            )
        if where != self.top and self.top not in where.parents:
            raise GitError(f"{path} lies outside the work tree {self.top} git reports for it")

    @classmethod
    def find(cls, path: Path, *, timeout: float = TIMEOUT_S) -> Repository | None:
        """The repository holding ``path``; None when it is in none (git missing
        included). A git directory pmos refuses is still a :class:`GitError`: the
        path *is* in a repository, just not one pmos reads."""
        try:
            return cls(path, timeout=timeout)
        except _NotInWorkTree:
            return None

    def __repr__(self) -> str:
        return f"Repository({str(self.top)!r})"

    def run(
        self,
        *args: str,
        data: bytes | None = None,
        here: bool = False,
        work_tree: bool = False,
    ) -> bytes:
        """Output of one git command (with the safe configuration); a
        :class:`GitError` when git fails. ``here`` runs it in :attr:`start`
        instead of the root (relative paths, the pathspec ``.``); ``work_tree``
        also blanks every filter driver, for commands that read the work tree."""
        overrides = self._filters_blanked() if work_tree else ()
        return _run(self.start if here else self.top, list(args), data, self.timeout, overrides)

    def _filters_blanked(self) -> tuple[tuple[str, str], ...]:
        """Settings that blank every filter driver the repository's configuration
        names (clean, smudge, process), so none runs while git reads the work
        tree. Reading the configuration runs nothing."""
        if self._blanked is None:
            try:
                listed = self.run("config", "-z", "--get-regexp", r"^filter\.")
            except GitError:
                listed = b""  # git config exits 1 when nothing matches
            names: set[str] = set()
            for entry in listed.split(b"\0"):
                key = entry.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
                if key.startswith("filter.") and key.count(".") >= 2:
                    names.add(key[len("filter.") : key.rindex(".")])
            out: list[tuple[str, str]] = []
            for name in sorted(names):
                out += [(f"filter.{name}.{part}", "") for part in ("clean", "smudge", "process")]
                out.append((f"filter.{name}.required", "false"))
            self._blanked = tuple(out)
        return self._blanked

    def relative(self, path: Path) -> str:
        """``path`` relative to the work tree's root, as git names it ('' for the root)."""
        real = Path(os.path.realpath(path))
        if real == self.top:
            return ""
        try:
            return real.relative_to(self.top).as_posix()
        except ValueError:
            raise GitError(f"{path} is outside the repository {self.top}") from None

    def commit(self, revision: str, *, what: str = "revision") -> str:
        """The commit id ``revision`` names; a clean error when it names none."""
        if not revision.strip() or revision.startswith("-"):
            raise GitError(f"{what} {revision!r} is not a git revision")
        try:
            out = self.run(
                "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"
            )
        except GitError:
            raise GitError(
                f"{what} {revision!r} names no commit of the repository {self.top}"
            ) from None
        return out.decode().strip()

    def ref_exists(self, ref: str) -> bool:
        try:
            self.run("rev-parse", "--verify", "--quiet", "--end-of-options", ref)
        except GitError:
            return False
        return True

    def merge_base(self, first: str, second: str) -> str | None:
        try:
            out = self.run("merge-base", "--end-of-options", first, second)
        except GitError:
            return None
        return out.decode().strip() or None

    def tree(self, commit: str, paths: Iterable[str] = ()) -> list[TreeEntry]:
        """Every file at ``commit`` (recursively), under ``paths`` when given (each a
        file or a folder, relative to the repository's root)."""
        wanted = [p for p in paths]
        args = ["ls-tree", "-r", "-z", "--full-tree", commit]
        if wanted:
            args += ["--", *wanted]
        out: list[TreeEntry] = []
        for item in self.run(*args).split(b"\0"):
            if not item:
                continue
            meta, _, name = item.partition(b"\t")
            mode, kind, sha = meta.decode().split()
            out.append(TreeEntry(mode, kind, sha, name.decode("utf-8", "surrogateescape")))
        return out

    def blobs(
        self, shas: Iterable[str], *, at: Mapping[str, str] | None = None
    ) -> dict[str, bytes]:
        """The content of each blob, by id; a missing one is a :class:`GitError`.

        ``at`` names, for some blobs, the path (from the top) where a checkout
        puts them: a regular file there whose bytes hash to the blob's id is that
        blob (the id is git's name for exactly those bytes), and is read from the
        disk instead of being inflated by git, which for the tens of megabytes of
        a revision's ledgers is most of the cost. Anything else there (another
        content, a link, no file) leaves the blob to git."""
        wanted = list(dict.fromkeys(shas))
        out: dict[str, bytes] = {}
        for sha in wanted:
            path = at.get(sha) if at else None
            if path is not None and (content := self._checked_out(path, sha)) is not None:
                out[sha] = content
        wanted = [sha for sha in wanted if sha not in out]
        if not wanted:
            return out
        try:
            data = _run(
                self.top,
                ["cat-file", "--batch"],
                "".join(f"{s}\n" for s in wanted).encode(),
                self.timeout,
                spool=True,
            )
        except GitError as exc:
            raise GitError(
                f"a git object is missing from {self.git_dir} ({exc}; a partial or shallow "
                "clone? fetch it first: pmos never fetches)"
            ) from None
        pos = 0
        for sha in wanted:
            end = data.index(b"\n", pos)
            header = data[pos:end].split()
            if len(header) != 3:
                raise GitError(
                    f"the git object {sha} is missing from {self.git_dir} (a partial or "
                    "shallow clone? fetch it first; pmos never fetches)"
                )
            size = int(header[2])
            out[sha] = data[end + 1 : end + 1 + size]
            pos = end + 1 + size + 1
        return out

    def _checked_out(self, path: str, sha: str) -> bytes | None:
        """The file at ``path`` in the work tree when it is the blob ``sha``, else
        None. Its bytes are hashed as git names a blob (SHA-1, or SHA-256 in a
        repository of that object format), so a file a build step changed, a
        filter rewrote or a checkout left out is simply not used. Only a regular
        file under the top is opened (no link followed at the last step, never
        blocking on a fifo); a file that moves under it fails the hash."""
        if path.startswith("/") or ".." in path.split("/"):
            return None
        try:
            handle = os.open(
                os.path.join(self.top, path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
            )
        except OSError:
            return None
        try:
            info = os.fstat(handle)
            if not stat.S_ISREG(info.st_mode):
                return None
            # One read of the size the file has: a short read (the file changed
            # under it) is simply other bytes, which the hash below refuses.
            content = os.read(handle, info.st_size)
        except OSError:
            return None
        finally:
            os.close(handle)
        named = hashlib.sha1() if len(sha) == 40 else hashlib.sha256()
        named.update(b"blob %d\0" % len(content))
        named.update(content)
        return content if named.hexdigest() == sha else None
