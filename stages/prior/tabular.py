"""Tabular datasets for the reconstruction case study: integer-coded tables with their domains.

A dataset is a CSV of integer codes (one column per attribute) and a JSON domain file
{column: number of values}. Codes run over 0..domain-1 in the order of the sorted original values
(Annamalai et al. 2024's `make_categorical`), so ordinal columns (AGEP, zipcode, ...) keep their order
and the `within` metric's |X - z| is meaningful on them. Which columns a dataset has is what its
domain file says (`read_domain`), so an experiment names SCHL on the paper's ACS table and EDU on the
stand-in without code changes. The files are read from `data_dir` (default: $ADVBOUNDS_DATA, else
../shared/data next to the repository). The names (`DATASETS`):

* `acs/recon-synth`, `fire/recon-synth`: the paper's tables, as `python -m pipeline.data fetch acs|fire`
  prepares them (recon-synth's preparation of folktables CA 2018 and of the DataSF export;
  `<name>/recon-synth/<name>.csv` and `-domain.json`). Not shipped: fetch them first.
* `acs`: the 16-attribute stand-in prepared from the NIST SDNist ACS 2019 excerpts
  (`acs/sdnist/national2019_16attr_prepared.csv`); it has EDU (13 values) where the paper's
  folktables CA 2018 table has SCHL (25), and MSP where the paper has MAR.
* `fire`: the 10 paper columns of two short windows of San Francisco Fire Department calls
  (`fire/fire_prepared.csv`); its domains are smaller than the paper's (e.g. 28 zipcodes).
"""
from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from stages.prior.base import data_path

__all__ = ["DATASETS", "STAND_INS", "FETCHED", "Table", "load_table", "read_domain", "table_from_arrays",
           "column_indices", "check_dataset"]

#: The stand-ins (small samples shipped in tests/data): name -> (table CSV, domain JSON), relative to data_dir.
STAND_INS = {
    "acs": ("acs/sdnist/national2019_16attr_prepared.csv", "acs/sdnist/national2019_16attr_prepared-domain.json"),
    "fire": ("fire/fire_prepared.csv", "fire/fire_prepared-domain.json"),
}
#: The paper's tables as `python -m pipeline.data fetch <source>` writes them: name -> (CSV, domain JSON, source).
FETCHED = {
    "acs/recon-synth": ("acs/recon-synth/acs.csv", "acs/recon-synth/acs-domain.json", "acs"),
    "fire/recon-synth": ("fire/recon-synth/fire.csv", "fire/recon-synth/fire-domain.json", "fire"),
}
#: Every dataset name the tabular prior and experiments accept -> (table CSV, domain JSON).
DATASETS = {**STAND_INS, **{name: files[:2] for name, files in FETCHED.items()}}


def check_dataset(dataset, argument: str = "dataset") -> str:
    """The dataset name, or a one-sentence ValueError naming `argument` and listing the known names."""
    if not isinstance(dataset, str) or dataset not in DATASETS:
        raise ValueError(f"{argument} must be one of {', '.join(DATASETS)} (the stand-ins and the paper's tables "
                         f"that `python -m pipeline.data fetch` prepares), got {dataset!r}.")
    return dataset


def _dataset_file(dataset: str, which: int, data_dir):
    """Path of the dataset's table (0) or domain file (1); a missing one says how to fetch it (base.data_path)."""
    return data_path(DATASETS[dataset][which], data_dir)


def read_domain(dataset: str, data_dir=None) -> dict[str, int]:
    """The dataset's columns and their sizes, from its domain file alone (cheap: the table is not read)."""
    check_dataset(dataset)
    path = _dataset_file(dataset, 1, data_dir)
    try:
        domain = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"domain file {path} is not JSON ({exc.msg}); it must map each column to its size.") from None
    if not isinstance(domain, dict) or not domain or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in domain.values()):
        raise ValueError(f"domain file {path} must map each column name to its number of values (an integer >= 1).")
    return {str(c): int(m) for c, m in domain.items()}


@dataclass(frozen=True)
class Table:
    """An integer-coded table: values[r, j] in 0..domain[j]-1 is column j of record r."""

    name: str
    columns: tuple[str, ...]
    domain: tuple[int, ...]
    values: np.ndarray

    @property
    def n_records(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_columns(self) -> int:
        return len(self.columns)

    def content_hash(self) -> str:
        """SHA-256 of the columns, the domain and the codes: what a fit on this table depends on."""
        h = hashlib.sha256()
        h.update(json.dumps([list(self.columns), list(self.domain)]).encode())
        h.update(np.ascontiguousarray(self.values, dtype=np.int64).tobytes())
        return h.hexdigest()


def table_from_arrays(name: str, columns: Sequence[str], domain: Sequence[int], values) -> Table:
    """Validate and wrap a table: every code an integer in 0..domain-1, one domain size per column."""
    columns = tuple(str(c) for c in columns)
    if len(set(columns)) != len(columns):
        raise ValueError(f"columns of {name} must be distinct, got {list(columns)}.")
    domain = tuple(int(m) for m in domain)
    if len(domain) != len(columns) or any(m < 1 for m in domain):
        raise ValueError(f"domain of {name} must give a size >= 1 for each of its {len(columns)} columns, got {list(domain)}.")
    arr = np.asarray(values)
    if arr.ndim != 2 or arr.shape[1] != len(columns) or arr.shape[0] < 1:
        raise ValueError(f"table {name} must have shape (records, {len(columns)}), got {arr.shape}.")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"table {name} must hold integer codes, got dtype {arr.dtype}.")
    arr = arr.astype(np.int64)
    low, high = arr.min(axis=0), arr.max(axis=0)
    for j, column in enumerate(columns):
        if low[j] < 0 or high[j] >= domain[j]:
            bad = int(low[j]) if low[j] < 0 else int(high[j])
            raise ValueError(
                f"column {column!r} of {name} holds code {bad} outside its domain 0..{domain[j] - 1}; "
                f"fix the domain file (size {domain[j]}) or the table's codes."
            )
    return Table(name=name, columns=columns, domain=domain, values=arr)


def load_table(dataset: str, data_dir=None) -> Table:
    """Read a dataset of `DATASETS` (see the module docstring) from data_dir as a validated Table."""
    check_dataset(dataset)
    table_path = _dataset_file(dataset, 0, data_dir)
    domain = read_domain(dataset, data_dir)
    domain_path = _dataset_file(dataset, 1, data_dir)
    with open(table_path, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f), None)
    if not header:
        raise ValueError(f"table file {table_path} is empty; it needs a header row of column names.")
    missing = [c for c in header if c not in domain]
    if missing:
        raise ValueError(f"columns {missing} of {table_path} have no size in {domain_path}; add them to the domain file.")
    try:
        values = np.loadtxt(table_path, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    except ValueError as exc:
        raise ValueError(f"table file {table_path} must hold integer codes only ({str(exc).splitlines()[0]}).") from None
    return table_from_arrays(dataset, header, [domain[c] for c in header], values)


def column_indices(table_columns: Sequence[str], names: Sequence[str], argument: str) -> list[int]:
    """Positions of `names` among the table's columns; an unknown name fails naming `argument`."""
    out = []
    for name in names:
        if name not in table_columns:
            raise ValueError(f"{argument} names column {name!r}, which the table does not have; choose from {list(table_columns)}.")
        out.append(list(table_columns).index(name))
    if len(set(out)) != len(out):
        raise ValueError(f"{argument} must not repeat a column, got {list(names)}.")
    return out
