"""The kit root: where it is, what pmos.yaml says, and how one is created.

A kit is a folder with ``pmos.yaml``; everything pmos records lives in its
ledgers (``kit.store``). This package is imported by every command; it imports
only the store and pmos's foundation modules.
"""

from pmos.kit.config import CONFIG_NAME, Config, load_config
from pmos.kit.init import KIT_TEMPLATE_PATHS, InitReport, init_kit
from pmos.kit.root import ROOT_ENV, Kit, find_root, open_kit

__all__ = [
    "CONFIG_NAME",
    "KIT_TEMPLATE_PATHS",
    "ROOT_ENV",
    "Config",
    "InitReport",
    "Kit",
    "find_root",
    "init_kit",
    "load_config",
    "open_kit",
]
