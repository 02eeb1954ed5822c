"""``pmos init --ci github|gitlab``: the CI job that runs the merge gate.

The merge gate (``pmos gate --base REV``) decides whether a change may merge,
judged by the rules of the branch it merges into; a team makes it a required
check. This module writes the job that runs it into the product repository
(the git work tree the kit is in), never over an existing file:

* ``github``: ``.github/workflows/pmos-gate.yml``, a workflow on pull requests
  whose job is named ``pmos gate``: the name a branch rule's "require status
  checks to pass" lists. It checks out the whole history (``fetch-depth: 0``:
  the gate reads the base revision's objects), installs pmos, and runs the
  gate against ``origin/<base branch>``, its report appended to the job
  summary (``$GITHUB_STEP_SUMMARY``);
* ``gitlab``: ``.gitlab/pmos-gate.gitlab-ci.yml``, a job for merge request
  pipelines, to ``include:`` from the project's ``.gitlab-ci.yml`` (a project
  has one already, which pmos never edits).

pmos is installed from ``PMOS_PIP_SPEC``, a CI variable naming where the team
keeps pmos (a tagged git URL, a wheel, a requirement on an internal index):
the job fails, saying so, while it is unset.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from pmos._util.git import Repository
from pmos.errors import BadInput, GitError

CI_SYSTEMS = ("github", "gitlab")
#: Where each CI system's file goes, relative to the repository's top.
CI_FILES = {
    "github": ".github/workflows/pmos-gate.yml",
    "gitlab": ".gitlab/pmos-gate.gitlab-ci.yml",
}
#: The job's name: what a required status check names.
JOB_NAME = "pmos gate"
#: Kit roots pmos finds from the repository's top by itself (``pmos root``).
_FOUND_FROM_TOP = (".", "pmos")

_GITHUB = """\
# The pmos merge gate, written by `pmos init --ci github` (pmos {version}).
#
# It decides whether a pull request may merge, by the rules of the branch it
# merges into: every run the change records needs a passing verdict (and, while
# the gate is advisory, a PM's pass label on it), and a change to the kit's
# policy needs a PM's approval. Make the check "{job}" required for the default
# branch (Settings > Rules > Rulesets, or branch protection: "Require status
# checks to pass"), so a pull request merges only when it passes.
#
# Set the repository variable PMOS_PIP_SPEC (Settings > Secrets and variables >
# Actions > Variables) to where pip installs pmos {version} from: a tagged git
# URL, a wheel, or a requirement on your package index.
name: {job}
on:
  pull_request:
permissions:
  contents: read
jobs:
  pmos-gate:
    name: {job}
    runs-on: ubuntu-latest
    env:
      PMOS_PIP_SPEC: ${{{{ vars.PMOS_PIP_SPEC }}}}{root_env}
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install pmos
        run: |
          if [ -z "$PMOS_PIP_SPEC" ]; then
            echo "::error::set the repository variable PMOS_PIP_SPEC (see the top of this file)"
            exit 2
          fi
          python -m pip install "$PMOS_PIP_SPEC"
      - name: Decide whether the change may merge
        run: pmos gate --base "origin/${{{{ github.base_ref }}}}" --summary "$GITHUB_STEP_SUMMARY"
"""

_GITLAB = """\
# The pmos merge gate, written by `pmos init --ci gitlab` (pmos {version}).
#
# It decides whether a merge request may merge, by the rules of the branch it
# merges into: every run the change records needs a passing verdict (and, while
# the gate is advisory, a PM's pass label on it), and a change to the kit's
# policy needs a PM's approval. Include this file from .gitlab-ci.yml:
#
#   include:
#     - local: {path}
#
# and turn on "Pipelines must succeed" (Settings > Merge requests). Set the CI/CD
# variable PMOS_PIP_SPEC to where pip installs pmos {version} from: a tagged git
# URL, a wheel, or a requirement on your package index.
pmos-gate:
  stage: test
  image: python:3.11
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
  variables:
    GIT_DEPTH: "0"{root_var}
  script:
    - 'if [ -z "$PMOS_PIP_SPEC" ]; then echo "set the variable PMOS_PIP_SPEC"; exit 2; fi'
    - python -m pip install "$PMOS_PIP_SPEC"
    - git fetch --quiet origin "$CI_MERGE_REQUEST_TARGET_BRANCH_NAME"
    - pmos gate --base "origin/$CI_MERGE_REQUEST_TARGET_BRANCH_NAME" --summary pmos-gate.md
  artifacts:
    when: always
    expose_as: {job}
    paths:
      - pmos-gate.md
"""


class CiFile(NamedTuple):
    """A CI file to write: where, and what."""

    path: Path
    relative: str
    text: str


def ci_file(kit_root: Path, system: str, version: str) -> CiFile:
    """The CI file for ``system`` in the repository ``kit_root`` is in (which may
    not exist yet: it is looked up from its nearest existing folder).

    Refused (nothing written anywhere): an unknown system, a kit outside a git
    work tree, a file already there."""
    if system not in CI_SYSTEMS:
        raise BadInput(f"--ci {system!r}: expected one of {', '.join(CI_SYSTEMS)}")
    top = _repository_top(kit_root)
    relative = CI_FILES[system]
    target = top / relative
    if target.exists() or target.is_symlink():
        raise BadInput(
            f"{target} exists; pmos init never overwrites a file: move it away to have pmos "
            f"write its {system} gate job, or merge the job from "
            "docs/how-to/gate-merges-in-ci.md into it by hand"
        )
    kit_rel = Path(os.path.relpath(os.path.realpath(kit_root), top)).as_posix()
    needs_root = kit_rel not in _FOUND_FROM_TOP
    if system == "github":
        root_env = f"\n      PMOS_ROOT: {kit_rel}" if needs_root else ""
        text = _GITHUB.format(version=version, job=JOB_NAME, root_env=root_env)
    else:
        root_var = f"\n    PMOS_ROOT: {kit_rel}" if needs_root else ""
        text = _GITLAB.format(version=version, job=JOB_NAME, path=relative, root_var=root_var)
    return CiFile(target, relative, text)


def write(ci: CiFile) -> None:
    """Create the file, refusing to replace one that appeared meanwhile."""
    ci.path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(ci.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, ci.text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def _existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _repository_top(kit_root: Path) -> Path:
    where = _existing(kit_root)
    try:
        repo = Repository.find(where, timeout=30)
    except GitError as exc:
        raise BadInput(f"--ci: {exc}") from None
    if repo is None:
        raise BadInput(
            f"--ci: {where} is not in a git repository; vendor the kit into the product's "
            "repository (git init first) so the CI file goes to its top"
        )
    return repo.top
