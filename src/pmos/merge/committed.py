"""The kit's policy as the merge gate would accept it, for commands other than the gate.

A kit's policy (pmos.yaml's thresholds and signing rule, the allowed-signers
file, rubrics, known-bad cases, the exemplar log, override anchors: the trust
files of :func:`pmos.merge.kitfiles.trust_paths`) decides what its records
count for. ``pmos sync`` puts those figures in the team database, so it must
take the policy from where the gate takes it: the committed tree of the
repository's default branch, never the working tree of whatever branch a sync
runs on. A feature branch that lowers ``kappa_threshold`` or adds a signer in
its working tree (or in its commits) changes nothing the database shows until
the change is merged.

:func:`committed_policy` writes the default branch's trust files into a
temporary folder, exactly as the gate materialises the base's
(:func:`pmos.merge.kitfiles.trust_entries`, :func:`~pmos.merge.kitfiles.write_tree`),
and opens a kit whose policy files are read from there and whose ledgers are
the working tree's (the records being synced). It also lists the trust files
whose working-tree content differs from the default branch's, so the command
can say that the checkout's own policy was not used.

The default branch is the one ``origin/HEAD`` names (a clone sets it), else
``init.defaultBranch``, ``main`` or ``master``, the first with a commit; when
pmos.yaml committed there sets ``pack.default_branch`` to another branch, that
branch is the default (its remote-tracking ref ``origin/NAME`` when there is
one, else the local branch), and its pmos.yaml must name itself too.

A kit outside git has no default branch and nothing the gate would accept: it
is refused unless the caller says its working tree is the policy
(``working_tree=True``, ``pmos sync --policy-from-working-tree``). Inside git
that option is refused: a branch cannot choose its own policy.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from pmos._util.git import Repository, TreeEntry
from pmos.errors import BadInput, GitError
from pmos.kit import Kit
from pmos.kit.config import CONFIG_NAME
from pmos.merge.kitfiles import join, ledger_folders, trust_entries, under, write_tree
from pmos.merge.policy import approval_files

#: The option of ``pmos sync`` that takes a kit's working tree as its policy.
WORKING_TREE_OPTION = "--policy-from-working-tree"
#: ``Policy.source`` of a kit whose working tree is its policy.
WORKING_TREE = f"the working tree ({WORKING_TREE_OPTION}: the kit is not in a git repository)"


class Policy(NamedTuple):
    """The kit under its policy, where that policy came from, and the trust files
    (kit-relative) whose working-tree content is not the policy's."""

    kit: Kit
    #: ``refs/heads/main:pmos/pmos.yaml``, or :data:`WORKING_TREE`.
    source: str
    differs: list[str]


@contextmanager
def committed_policy(kit: Kit, *, working_tree: bool = False) -> Iterator[Policy]:
    """The policy of ``kit`` (see the module docstring), valid inside the ``with``."""
    try:
        repo = Repository(kit.root)
    except GitError:
        if _inside_git(kit.root):
            raise  # a repository the runner refuses (a git directory elsewhere): its words
        if not working_tree:
            raise BadInput(
                f"the kit at {kit.root} is not in a git repository, so no default branch "
                "holds a policy the merge gate would accept; to take the kit's working tree "
                f"(pmos.yaml, allowed signers, rubrics) as its policy, pass {WORKING_TREE_OPTION}"
            ) from None
        yield Policy(kit, WORKING_TREE, [])
        return
    if working_tree:
        raise BadInput(
            f"{WORKING_TREE_OPTION} is only for a kit outside git: the kit at {kit.root} is in "
            f"the git repository {repo.top}, whose default branch's committed policy applies"
        )
    kit_dir = repo.relative(kit.root)
    ref, commit = _default_branch(repo, kit_dir)
    with tempfile.TemporaryDirectory(prefix="pmos-policy-") as folder:
        root = Path(folder)
        config_path = join(kit_dir, CONFIG_NAME) if kit_dir else CONFIG_NAME
        write_tree(repo, _config_entry(repo, commit, config_path, ref), kit_dir, root)
        config = Kit.open(root).config
        trusted = trust_entries(repo, commit, kit_dir, config)
        write_tree(repo, trusted.values(), kit_dir, root)
        policy = Kit(root, config, ledger_root=kit.root)
        differs = _differences(repo, kit, commit, kit_dir, trusted)
        yield Policy(policy, f"{ref}:{config_path}", differs)


def _inside_git(path: Path) -> bool:
    """Whether ``path`` or a folder above it holds a ``.git`` (a folder or a file)."""
    here = Path(os.path.realpath(path))
    return any(os.path.lexists(folder / ".git") for folder in (here, *here.parents))


def _config_entry(repo: Repository, commit: str, config_path: str, ref: str) -> list[TreeEntry]:
    entries = [e for e in repo.tree(commit, [config_path]) if e.kind == "blob"]
    if not entries:
        raise BadInput(
            f"the kit's {CONFIG_NAME} is not committed on the default branch ({ref}:"
            f"{config_path}): a kit's settings reach the database only from there; merge it first"
        )
    return entries


def _default_branch(repo: Repository, kit_dir: str) -> tuple[str, str]:
    """The default branch's ref and commit (see the module docstring)."""
    ref = _git_default(repo)
    if ref is None:
        raise BadInput(
            f"the repository at {repo.top} has no default branch with a commit yet, so the kit "
            "has no policy the merge gate would accept: commit pmos.yaml to the default "
            "branch (or set it: git remote set-head origin --auto) first"
        )
    named = _configured_branch(repo, repo.commit(ref), kit_dir)
    if named is None or ref in (f"refs/heads/{named}", f"refs/remotes/origin/{named}"):
        return ref, repo.commit(ref)
    found = _branch_ref(repo, named)
    if found is None:
        raise BadInput(
            f"pmos.yaml on {ref} names {named!r} as the default branch (pack.default_branch), "
            f"and the repository at {repo.top} has no such branch (nor origin/{named})"
        )
    again = _configured_branch(repo, repo.commit(found), kit_dir)
    if again != named:
        raise BadInput(
            f"pmos.yaml on {ref} names {named!r} as the default branch (pack.default_branch), "
            f"and pmos.yaml on {found} names {again or 'none'}: make them agree"
        )
    return found, repo.commit(found)


def _git_default(repo: Repository) -> str | None:
    """The ref ``origin/HEAD`` names, else the first of ``init.defaultBranch``,
    ``main`` and ``master`` with a commit; None when none has one."""
    try:
        return repo.run("symbolic-ref", "--quiet", "refs/remotes/origin/HEAD").decode().strip()
    except (GitError, UnicodeDecodeError):
        pass
    try:
        configured = repo.run("config", "--get", "init.defaultBranch").decode().strip()
    except (GitError, UnicodeDecodeError):
        configured = ""
    for name in dict.fromkeys(filter(None, (configured, "main", "master"))):
        if repo.ref_exists(f"refs/heads/{name}^{{commit}}"):
            return f"refs/heads/{name}"
    return None


def _branch_ref(repo: Repository, name: str) -> str | None:
    """``origin/NAME`` (what the remote merged) when it exists, else the local branch."""
    if name.startswith("-") or not name.strip():
        return None
    for ref in (f"refs/remotes/origin/{name}", f"refs/heads/{name}"):
        if repo.ref_exists(f"{ref}^{{commit}}"):
            return ref
    return None


def _configured_branch(repo: Repository, commit: str, kit_dir: str) -> str | None:
    """``pack.default_branch`` of pmos.yaml at ``commit``, when it sets one."""
    config_path = join(kit_dir, CONFIG_NAME) if kit_dir else CONFIG_NAME
    entries = [e for e in repo.tree(commit, [config_path]) if e.kind == "blob"]
    if not entries:
        return None
    with tempfile.TemporaryDirectory(prefix="pmos-policy-") as folder:
        write_tree(repo, entries, kit_dir, Path(folder))
        pack = Kit.open(Path(folder)).config.raw.get("pack") or {}
    named = pack.get("default_branch") if isinstance(pack, dict) else None
    return named if isinstance(named, str) and named else None


def _differences(
    repo: Repository, kit: Kit, commit: str, kit_dir: str, trusted: dict[str, TreeEntry]
) -> list[str]:
    """Kit-relative trust files whose working-tree content is not the committed
    policy's: the files a policy approval would state (:func:`approval_files`,
    under both the working tree's trust paths and the policy's), ledgers left out."""
    cut = len(kit_dir) + 1 if kit_dir else 0
    contents = repo.blobs(e.sha for e in trusted.values())
    committed = {
        path[cut:]: hashlib.sha256(contents[e.sha]).hexdigest() for path, e in trusted.items()
    }
    ledgers = [folder[cut:] for folder in ledger_folders(kit.config, kit_dir).values()]
    present = {
        f["path"]: f["sha256"]
        for f in approval_files(kit, commit)
        if f["sha256"] is not None and not under(f["path"], ledgers)
    }
    both = committed.keys() | present.keys()
    return sorted(p for p in both if committed.get(p) != present.get(p))
