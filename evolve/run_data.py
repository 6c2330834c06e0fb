"""The data a run ran on, kept in its run folder: a moved or archived run can be checked and rerun without the
original file, and a changed original is told apart from the run's by the hash.

A local data file is copied as it was; data from the hub or synthesized from the
config is written as the items the run loaded. ``data/source.json`` says where it came from, its memevo data hash
and which file holds it. Written once, at the run's first start: a resume keeps the first copy.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from memevo.core.atomic_files import write_json_atomic
from memevo.environments.amemgym.data.io import save_items
from memevo.environments.amemgym.data.models import Item
from memevo.evolve.config import EvolveConfig

DATA_FOLDER = "data"
SOURCE_FILE = "source.json"


def data_source(config: EvolveConfig) -> Path | str:
    """Where the config's data comes from: a local file, a hub id, or the config's ``data.synth``."""
    if config.data.path is None:
        return "synthesized from data.synth (config.json)"
    path = config.resolve_path(config.data.path)
    return path if path.exists() else config.data.path


def keep_data(run_dir: Path, config: EvolveConfig, items: Sequence[Item], *, data_hash: str) -> Path:
    """Keep the run's data under ``run_dir/data`` (once); returns the record ``source.json``."""
    source = data_source(config)
    folder = run_dir / DATA_FOLDER
    record = folder / SOURCE_FILE
    if record.exists():
        return record
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(source, Path) and source.is_file():
        kept = folder / source.name
        shutil.copy2(source, kept)  # a copy, not a link: an original edited in place must not change the run's
        how = "a copy of the data file (the run used its items after data.limit and max_periods/max_questions)"
    else:
        kept = folder / "items.json"
        save_items(items, kept)
        how = "the items the run loaded (after data.limit and max_periods/max_questions)"
    write_json_atomic(record, {"source": str(source), "data_hash": data_hash, "file": kept.name, "holds": how})
    return record
