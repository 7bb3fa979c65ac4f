"""`python -m pipeline.data fetch|verify`: get the paper's real data from its public sources, and check it.

    python -m pipeline.data fetch acs|fire|enron|rockyou|gpt2|all [...] [--data-dir DIR] [--url NAME=URL]
    python -m pipeline.data verify [NAME ...] [--data-dir DIR]

`fetch` downloads each original into data_dir (default: $ADVBOUNDS_DATA, else ../shared/data next to the
repository, the same folder the experiments read), with a progress bar and resumable partial downloads
(`<file>.part`, continued with an HTTP Range request when the command is run again), then prepares it
and checks the result:

* `acs`: the ACS 2018 1-Year person file of California (`psam_p06.csv`, from `csv_pca.zip` in
  folktables' source layout `<base>/2018/1-Year/`), prepared as Annamalai et al. (2024,
  recon-synth `datasets/prepare_dataset.ipynb`) did: the 16 features of folktables' ACSEmployment,
  folktables' post-processing, AGEP // 10, each column coded by its sorted values, domain = number of
  distinct values. The domain must equal the paper's (`acs/reference/recon-synth_acs-domain.json`).
* `fire`: the DataSF "Fire Department Calls for Service" export (dataset nuek-vuh3), the paper's 10
  columns with the same coding. DataSF's table grows every day, so a domain different from the
  paper's is reported, not refused.
* `enron`: the CMU Enron tarball (`enron_mail_20150507.tar.gz`), unpacked to `enron/maildir/`.
* `rockyou`: the top-100k RockYou list with counts (the pinned public copy the shared data README
  names), plus the all-digit and the 9-digit extracts the Zipf experiments read.
* `gpt2`: the Hugging Face files of GPT-2 (config, safetensors weights, tokenizer) into `gpt2/`, so
  that `transformers` loads it offline with `from_pretrained("<data_dir>/gpt2")`.

Every fetch writes `<dataset>/SHA256SUMS.fetched` (sha256sum format, paths relative to data_dir);
`verify` re-checks those and any `SHA256SUMS` in data_dir (the shared data folder and tests/data carry
one), and re-checks the prepared tables' codes and domains. A source that cannot be reached, a
truncated download or a failed check is one sentence on stderr and exit status 1; outputs are written
to temporary names and renamed only when complete, so no half-written file is left under its final
name (a partial download stays as `.part` to resume from).

Base URLs are overridable, for mirrors and for the tests: `--url acs=URL` or $ADVBOUNDS_URL_ACS (and
_FIRE, _ENRON, _ROCKYOU, _GPT2). A checksum pinned to a public source applies only to that source.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import http.client
import io
import json
import os
import re
import shutil
import sys
import tarfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from stages.prior.base import DATA_ENV  # the one definition of the default data folder is there

CHUNK = 1 << 20
TIMEOUT_S = 60.0
USER_AGENT = "advbounds-data/0.1 (+https://github.com; research data fetcher)"


class DataError(Exception):
    """A failure the user can act on: its message is the one sentence printed."""


# ---------------------------------------------------------------------------------------------
# Downloading: resumable (Range), with a progress bar, atomic (.part renamed when complete).

def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _progress(total: int | None, initial: int, desc: str):
    from tqdm import tqdm

    # A bar only on a terminal: redirected to a file, tqdm's redraws would fill it with control characters.
    return tqdm(total=total, initial=initial, unit="B", unit_scale=True, unit_divisor=1024, desc=desc,
                file=sys.stderr, mininterval=0.5, leave=True, disable=not sys.stderr.isatty())


def download(url: str, dest: Path, *, name: str, sha256: str | None = None, progress: bool = True) -> Path:
    """Download url to dest through dest.part, resuming a .part left by an interrupted run.

    Raises DataError (one sentence) when the source is unreachable, the transfer stops early (the
    .part stays, so running again resumes) or the file's sha256 differs from the pinned one (the
    .part is removed: it cannot be resumed into the right file).
    """
    dest = Path(dest)
    part = dest.with_name(dest.name + ".part")
    offset = part.stat().st_size if part.is_file() else 0
    headers = {"User-Agent": USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT_S)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:  # the .part is already whole (or longer than the file): start over
            part.unlink()
            return download(url, dest, name=name, sha256=sha256, progress=progress)
        raise DataError(f"{name}: the source {url} answered HTTP {exc.code} ({exc.reason}); check the URL "
                        f"(--url {name}=... or ${_url_env(name)}) or try again later.") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataError(f"{name}: cannot reach {url} ({reason}); check your internet connection or point "
                        f"--url {name}=... (or ${_url_env(name)}) at a mirror.") from None
    with response:
        status = getattr(response, "status", 200)
        length = response.headers.get("Content-Length")
        if offset and status == 206:
            start = re.match(r"bytes (\d+)-", response.headers.get("Content-Range", ""))
            if not start or int(start.group(1)) != offset:
                raise DataError(f"{name}: {url} resumed at the wrong byte ({response.headers.get('Content-Range')!r} "
                                f"for a request from byte {offset}); delete {part} and run again.")
        elif offset:  # the server ignored the Range header and sends the whole file
            offset = 0
        total = (int(length) + offset) if length is not None else None
        dest.parent.mkdir(parents=True, exist_ok=True)
        bar = _progress(total, offset, f"{name}: {dest.name}") if progress else None
        try:
            with open(part, "ab" if offset else "wb") as out:
                while block := response.read(CHUNK):
                    out.write(block)
                    if bar is not None:
                        bar.update(len(block))
        except (OSError, urllib.error.URLError, http.client.HTTPException) as exc:
            raise DataError(f"{name}: the download of {url} stopped after {part.stat().st_size} bytes ({exc}); "
                            f"run the same command again to resume from {part}.") from None
        finally:
            if bar is not None:
                bar.close()
    got = part.stat().st_size
    if total is not None and got != total:
        raise DataError(f"{name}: the download of {url} stopped after {got} of {total} bytes; run the same "
                        f"command again to resume from {part}.")
    if sha256 is not None:
        digest = _sha256(part)
        if digest != sha256:
            part.unlink()
            raise DataError(f"{name}: {url} has sha256 {digest}, expected {sha256}; the source changed or the "
                            f"download was corrupted (the partial file was removed; run again to retry).")
    os.replace(part, dest)
    return dest


# ---------------------------------------------------------------------------------------------
# Writing outputs atomically.

def _write_atomic(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    os.replace(tmp, path)


def _write_all_or_nothing(files: dict[Path, bytes | str]) -> None:
    """Write every file under a temporary name first, then rename them all."""
    tmps = {}
    try:
        for path, data in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_bytes(data.encode() if isinstance(data, str) else data)
            tmps[path] = tmp
    except BaseException:
        for tmp in tmps.values():
            tmp.unlink(missing_ok=True)
        raise
    for path, tmp in tmps.items():
        os.replace(tmp, path)


def _write_manifest(data_dir: Path, dataset: str, paths: list[Path]) -> Path:
    lines = "".join(f"{_sha256(p)}  {p.relative_to(data_dir).as_posix()}\n" for p in sorted(paths))
    manifest = data_dir / dataset / "SHA256SUMS.fetched"
    _write_atomic(manifest, lines)
    return manifest


# ---------------------------------------------------------------------------------------------
# The preparation of Annamalai et al. (recon-synth): sorted values -> codes, domain = distinct values.

#: The paper's domains: recon-synth @ 45b84a9cdd963dd4b2735298d4a903abfedd01bb, datasets/domain/*.json.
PAPER_DOMAINS = {
    "acs": {"MIG": 4, "RAC1P": 9, "CIT": 5, "RELP": 18, "ESP": 9, "DIS": 2, "SCHL": 25, "DEYE": 2, "MAR": 5,
            "ANC": 5, "SEX": 2, "MIL": 5, "NATIVITY": 2, "DREM": 3, "DEAR": 2, "AGEP": 10},
    "fire": {"Call Type": 31, "Call Final Disposition": 15, "City": 9, "Zipcode of Incident": 27, "Battalion": 12,
             "Station Area": 46, "Priority": 9, "ALS Unit": 2, "Call Type Group": 4, "Number of Alarms": 5},
}
REFERENCE_FILES = {"acs": "acs/reference/recon-synth_acs-domain.json",
                   "fire": "fire/reference/recon-synth_fire-domain.json"}
#: folktables.ACSEmployment.features, in folktables' order.
ACS_FEATURES = ["AGEP", "SCHL", "MAR", "RELP", "DIS", "ESP", "CIT", "MIG", "MIL", "ANC", "NATIVITY", "DEAR",
                "DEYE", "DREM", "SEX", "RAC1P"]
#: The 10 columns recon-synth keeps of the DataSF export.
FIRE_COLUMNS = ["Call Type", "Call Final Disposition", "City", "Zipcode of Incident", "Battalion", "Station Area",
                "Priority", "ALS Unit", "Call Type Group", "Number of Alarms"]


def _plain(value):
    """A JSON-friendly original value: NaN -> None, 3.0 -> 3, numpy scalars -> Python ones."""
    import math

    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer():
            return int(value)
    return value


def make_categorical(df):
    """recon-synth's make_categorical, with codes kept in 0..domain-1.

    Each column becomes the codes of its sorted distinct values; domain[col] = number of distinct
    values, a missing value counted as one (as upstream). Upstream codes a missing value -1; here, in a
    column that has one, every code is shifted by +1 so that missing = 0 (the shared data's convention),
    which leaves the domain sizes unchanged. Returns (coded frame, domain, codes: col -> {code: value}).
    """
    import pandas as pd

    coded, domain, codes = pd.DataFrame(index=df.index), {}, {}
    for col in df.columns:
        cat = df[col].astype("category")
        has_missing = bool(df[col].isna().any())
        values = ([None] if has_missing else []) + [_plain(v) for v in cat.cat.categories]
        coded[col] = cat.cat.codes.astype("int64") + (1 if has_missing else 0)
        domain[col] = len(values)
        codes[col] = {str(i): v for i, v in enumerate(values)}
    return coded, domain, codes


def prepare_acs(psam_csv: Path):
    """Annamalai et al.'s ACS table from a folktables person file: (coded frame, domain, codes)."""
    import numpy as np
    import pandas as pd

    # folktables.load_acs reads with these dtypes, then replaces ' ' by ''.
    dtypes = {"PINCP": np.float64, "RT": str, "SOCP": str, "SERIALNO": str, "NAICSP": str}
    header = pd.read_csv(psam_csv, nrows=0).columns
    missing = [c for c in ACS_FEATURES if c not in header]
    if missing:
        raise DataError(f"acs: {psam_csv} lacks the ACSEmployment columns {missing}; it is not a PUMS person file.")
    df = pd.read_csv(psam_csv, usecols=ACS_FEATURES, dtype={k: v for k, v in dtypes.items() if k in ACS_FEATURES})
    df = df.replace(" ", "")[ACS_FEATURES]
    # ACSEmployment.postprocess is `np.nan_to_num(x, -1)`; the -1 lands on `copy`, so NaN becomes 0.0.
    acs = pd.DataFrame(np.nan_to_num(df.to_numpy(dtype=float), -1), columns=ACS_FEATURES)
    acs["AGEP"] = acs["AGEP"].apply(lambda x: int(x) // 10)
    return make_categorical(acs)


def prepare_fire(raw_csv: Path):
    """Annamalai et al.'s FIRE table from the DataSF export: (coded frame, domain, codes)."""
    import pandas as pd

    header = pd.read_csv(raw_csv, nrows=0).columns
    missing = [c for c in FIRE_COLUMNS if c not in header]
    if missing:
        raise DataError(f"fire: {raw_csv} lacks the columns {missing}; it is not the DataSF Fire Department Calls "
                        f"for Service export (its columns are {list(header)[:6]}...).")
    # Default dtype inference, as upstream's plain pd.read_csv (usecols only saves memory).
    fire = pd.read_csv(raw_csv, usecols=FIRE_COLUMNS, low_memory=False)[FIRE_COLUMNS]
    return make_categorical(fire)


def domain_differences(domain: dict, reference: dict) -> list[str]:
    """'COL: 9 (paper 10)' for each column whose size differs; missing or extra columns too."""
    out = [f"{c}: {domain[c]} (paper {reference[c]})" for c in reference if c in domain and domain[c] != reference[c]]
    out += [f"{c}: missing (paper {reference[c]})" for c in reference if c not in domain]
    out += [f"{c}: {domain[c]} (not in the paper's domain)" for c in domain if c not in reference]
    return out


def check_table(table_csv: Path, domain: dict) -> list[str]:
    """Problems of a prepared table: columns differ from the domain, a code outside 0..size-1, an unused value."""
    import pandas as pd

    df = pd.read_csv(table_csv)
    problems = []
    if list(df.columns) != list(domain):
        return [f"{table_csv.name} has columns {list(df.columns)}, its domain file {list(domain)}"]
    for col, size in domain.items():
        values = df[col]
        if not pd.api.types.is_integer_dtype(values) or values.min() < 0 or values.max() >= size:
            problems.append(f"{table_csv.name} column {col!r} has codes outside 0..{size - 1}")
        elif values.nunique() != size:
            problems.append(f"{table_csv.name} column {col!r} uses {values.nunique()} codes, its domain says {size}")
    return problems


def _write_prepared(data_dir: Path, name: str, raw: Path, coded, domain: dict, codes: dict) -> Path:
    """Write <name>/recon-synth/<name>.csv, -domain.json, -codes.json and the paper's domain file, all or
    none, then <name>/SHA256SUMS.fetched over them and the raw file. Returns the table's path."""
    out = data_dir / name / "recon-synth"
    buf = io.StringIO()
    coded.to_csv(buf, index=False)
    files = {out / f"{name}.csv": buf.getvalue(), out / f"{name}-domain.json": json.dumps(domain) + "\n",
             out / f"{name}-codes.json": json.dumps(codes, indent=1) + "\n",
             data_dir / REFERENCE_FILES[name]: json.dumps(PAPER_DOMAINS[name])}
    _write_all_or_nothing(files)
    _write_manifest(data_dir, name, [raw, *files])
    return out / f"{name}.csv"


# ---------------------------------------------------------------------------------------------
# The sources.

@dataclass
class Source:
    name: str
    base_url: str
    describe: str
    fetch: Callable[["Source", Path, str, bool], list[str]] = field(repr=False)

    def url(self, override: str | None = None) -> str:
        return (override or os.environ.get(_url_env(self.name)) or self.base_url).rstrip("/")


def _url_env(name: str) -> str:
    return f"ADVBOUNDS_URL_{name.upper()}"


def _is_default(source: Source, base: str) -> bool:
    return base == source.base_url.rstrip("/")


def _fetch_acs(source: Source, data_dir: Path, base: str, progress: bool) -> list[str]:
    raw_dir = data_dir / "acs" / "raw" / "2018" / "1-Year"  # folktables' <root>/<year>/<horizon>/ layout
    psam = raw_dir / "psam_p06.csv"
    notes = []
    if not psam.is_file():
        archive = download(f"{base}/2018/1-Year/csv_pca.zip", raw_dir / "csv_pca.zip", name="acs", progress=progress)
        try:
            with zipfile.ZipFile(archive) as z:
                if psam.name not in z.namelist():
                    raise DataError(f"acs: {archive} holds {z.namelist()[:5]}, not {psam.name}; the source is not the "
                                    f"ACS 2018 1-Year California person file.")
                tmp = psam.with_name(f".{psam.name}.tmp")
                with z.open(psam.name) as src, open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst, CHUNK)
                os.replace(tmp, psam)
        except zipfile.BadZipFile:
            archive.unlink()
            raise DataError(f"acs: the download from {base} is not a zip archive (removed it); check the URL.") from None
        archive.unlink()  # folktables deletes the zip too
    else:
        notes.append(f"acs: using {psam} (already downloaded)")
    coded, domain, codes = prepare_acs(psam)
    diff = domain_differences(domain, PAPER_DOMAINS["acs"])
    if diff:
        raise DataError(f"acs: the prepared domain differs from the paper's ({'; '.join(diff)}); {psam} is not the "
                        f"2018 CA file the paper used (delete it and fetch again), nothing was written.")
    table = _write_prepared(data_dir, "acs", psam, coded, domain, codes)
    notes.append(f"acs: {len(coded):,} rows x {len(domain)} columns -> {table}; domain equals the paper's")
    return notes


def _fetch_fire(source: Source, data_dir: Path, base: str, progress: bool) -> list[str]:
    raw = data_dir / "fire" / "raw" / "Fire_Department_Calls_for_Service.csv"
    notes = []
    if not raw.is_file():
        download(f"{base}/rows.csv?accessType=DOWNLOAD", raw, name="fire", progress=progress)
    else:
        notes.append(f"fire: using {raw} (already downloaded)")
    coded, domain, codes = prepare_fire(raw)
    table = _write_prepared(data_dir, "fire", raw, coded, domain, codes)
    diff = domain_differences(domain, PAPER_DOMAINS["fire"])
    notes.append(f"fire: {len(coded):,} rows x {len(domain)} columns -> {table}; "
                 + (f"domain differs from the paper's ({'; '.join(diff)}): DataSF's table grows daily, the paper used "
                    f"an earlier export" if diff else "domain equals the paper's"))
    return notes


def _safe_members(tar: tarfile.TarFile, dest: Path):
    root = dest.resolve()
    for member in tar:
        target = (dest / member.name).resolve()
        if not (member.isfile() or member.isdir()) or not str(target).startswith(str(root) + os.sep):
            raise DataError(f"enron: the archive holds {member.name!r}, which is not a plain file inside it; refusing to unpack.")
        yield member


def _fetch_enron(source: Source, data_dir: Path, base: str, progress: bool) -> list[str]:
    archive = data_dir / "enron" / "enron_mail_20150507.tar.gz"
    maildir = data_dir / "enron" / "maildir"
    notes = []
    if not archive.is_file():
        download(f"{base}/enron_mail_20150507.tar.gz", archive, name="enron", progress=progress)
    if not maildir.is_dir():
        staging = data_dir / "enron" / ".unpack.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            with tarfile.open(archive, "r:gz") as tar:
                tar.extractall(staging, members=_safe_members(tar, staging))
        except (tarfile.TarError, EOFError, OSError) as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise DataError(f"enron: {archive} is not a complete .tar.gz ({exc}); delete it and fetch again.") from None
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        if not (staging / "maildir").is_dir():
            shutil.rmtree(staging, ignore_errors=True)
            raise DataError(f"enron: {archive} has no maildir/ folder; it is not the CMU Enron tarball.")
        os.replace(staging / "maildir", maildir)
        staging.rmdir()
    boxes = [p for p in maildir.iterdir() if p.is_dir()]
    n_messages = sum(1 for p in maildir.rglob("*") if p.is_file())
    _write_manifest(data_dir, "enron", [archive])
    notes.append(f"enron: {len(boxes)} mailboxes, {n_messages:,} messages in {maildir}")
    return notes


#: The pinned public copy of the RockYou top-100k list and what we derive from it (shared data README §5).
ROCKYOU_SHA256 = {
    "passwords/rockyou-top100k-withcount.txt": "a0ae1d17ed747bd62f5252e7adbd6c6c305c97125ea5ffb575c425c333cc0a2b",
    "passwords/rockyou-top100k-numeric-withcount.csv": "e7fa29e27e963e6736df7b6d35e40790f2372f8b4b5ef0e52a606db409a47baa",
    "passwords/rockyou-top100k-9digit-withcount.csv": "29c9d7c7bd0306ecd0ba52d8770274bd9f1e28495431e092fe56c4f3051549e8",
}


def rockyou_extracts(withcount_txt: Path) -> tuple[str, str]:
    """(numeric csv, 9-digit csv) from a `uniq -c` list: all-digit passwords in list order; 9-digit ranked."""
    rows = []
    with open(withcount_txt, "rb") as f:
        for line in f:
            m = re.match(rb"^\s*(\d+) (.*?)\r?\n?$", line)
            if m and re.fullmatch(rb"[0-9]+", m.group(2)):
                rows.append((m.group(2).decode("ascii"), int(m.group(1))))
    numeric, nine = io.StringIO(), io.StringIO()
    w = csv.writer(numeric)
    w.writerow(["password", "count", "length"])
    w.writerows((p, c, len(p)) for p, c in rows)
    w = csv.writer(nine)
    w.writerow(["rank", "password", "count"])
    w.writerows((rank, p, c) for rank, (p, c) in enumerate((r for r in rows if len(r[0]) == 9), 1))
    return numeric.getvalue(), nine.getvalue()


def _fetch_rockyou(source: Source, data_dir: Path, base: str, progress: bool) -> list[str]:
    pinned = _is_default(source, base)
    txt_rel = "passwords/rockyou-top100k-withcount.txt"
    txt = data_dir / txt_rel
    if not txt.is_file():
        download(f"{base}/rockyou-original.txt", txt, name="rockyou", progress=progress,
                 sha256=ROCKYOU_SHA256[txt_rel] if pinned else None)
    numeric, nine = rockyou_extracts(txt)
    n_nine = nine.count("\n") - 1
    if n_nine < 2:
        raise DataError(f"rockyou: {txt} has {n_nine} nine-digit passwords with counts; it is not a `uniq -c` "
                        f"password list (lines '<count> <password>').")
    files = {data_dir / "passwords/rockyou-top100k-numeric-withcount.csv": numeric,
             data_dir / "passwords/rockyou-top100k-9digit-withcount.csv": nine}
    if pinned:
        for path, text in files.items():
            rel = path.relative_to(data_dir).as_posix()
            if hashlib.sha256(text.encode()).hexdigest() != ROCKYOU_SHA256[rel]:
                raise DataError(f"rockyou: the derived {rel} differs from the published one (sha256); nothing was written.")
    _write_all_or_nothing(files)
    _write_manifest(data_dir, "passwords", [txt, *files])
    return [f"rockyou: {numeric.count(chr(10)) - 1:,} all-digit and {n_nine:,} nine-digit passwords -> {txt.parent}"
            + ("" if pinned else " (custom source: no pinned checksum)")]


GPT2_FILES = ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
              "vocab.json", "merges.txt"]
#: OpenAI's GPT-2 BPE files (the same bytes as the shared data's gpt2-tokenizer/, see its README §4).
GPT2_SHA256 = {"vocab.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
               "merges.txt": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"}


def check_gpt2(folder: Path) -> list[str]:
    """Problems of a GPT-2 folder: config, safetensors header, tokenizer (what from_pretrained reads)."""
    problems = []
    try:
        config = json.loads((folder / "config.json").read_text())
        if config.get("model_type") != "gpt2":
            problems.append(f"{folder / 'config.json'} has model_type {config.get('model_type')!r}, not 'gpt2'")
    except (OSError, ValueError) as exc:
        problems.append(f"{folder / 'config.json'} is not readable JSON ({exc})")
    try:
        with open(folder / "model.safetensors", "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size))
        end = max(t["data_offsets"][1] for k, t in header.items() if k != "__metadata__")
        if (folder / "model.safetensors").stat().st_size != 8 + size + end:
            problems.append(f"{folder / 'model.safetensors'} is truncated")
    except (OSError, ValueError, KeyError) as exc:
        problems.append(f"{folder / 'model.safetensors'} has no valid safetensors header ({exc})")
    try:
        from tokenizers import Tokenizer

        Tokenizer.from_file(str(folder / "tokenizer.json")).encode("Hello world")
    except ImportError:
        pass  # tokenizers comes with transformers; without it the tokenizer is left to from_pretrained
    except Exception as exc:  # noqa: BLE001  (any failure to load is the finding)
        problems.append(f"{folder / 'tokenizer.json'} does not load ({exc})")
    return problems


def _fetch_gpt2(source: Source, data_dir: Path, base: str, progress: bool) -> list[str]:
    folder = data_dir / "gpt2"
    pinned = _is_default(source, base)
    for name in GPT2_FILES:
        if not (folder / name).is_file():
            download(f"{base}/{name}", folder / name, name="gpt2", progress=progress,
                     sha256=GPT2_SHA256.get(name) if pinned else None)
    problems = check_gpt2(folder)
    if problems:
        raise DataError(f"gpt2: {problems[0]}; delete it and fetch again.")
    _write_manifest(data_dir, "gpt2", [folder / n for n in GPT2_FILES])
    return [f"gpt2: {len(GPT2_FILES)} files in {folder}; load with transformers' from_pretrained({str(folder)!r})"]


SOURCES = {
    s.name: s for s in [
        Source("acs", "https://www2.census.gov/programs-surveys/acs/data/pums",
               "ACS 2018 1-Year person file, California (folktables' source), prepared as Annamalai et al.",
               _fetch_acs),
        Source("fire", "https://data.sfgov.org/api/views/nuek-vuh3",
               "DataSF Fire Department Calls for Service (nuek-vuh3), prepared as Annamalai et al.", _fetch_fire),
        Source("enron", "https://www.cs.cmu.edu/~enron", "the CMU Enron email corpus (May 7, 2015 release)",
               _fetch_enron),
        Source("rockyou",
               "https://raw.githubusercontent.com/jenny-xie/Password_Manager/6d844519253fc8e31a2851d496316c9802eef046",
               "RockYou top-100k passwords with counts, and its numeric and 9-digit extracts", _fetch_rockyou),
        Source("gpt2", "https://huggingface.co/openai-community/gpt2/resolve/main",
               "GPT-2 (124M) weights, config and tokenizer in the Hugging Face layout", _fetch_gpt2),
    ]
}


# ---------------------------------------------------------------------------------------------
# verify

def _check_manifest(data_dir: Path, manifest: Path) -> tuple[int, list[str]]:
    base = manifest.parent if manifest.name == "SHA256SUMS" else data_dir
    checked, problems = 0, []
    for line in manifest.read_text().splitlines():
        if not line.strip():
            continue
        digest, _, rel = line.partition("  ")
        path = base / rel.strip()
        shown = path.relative_to(data_dir) if path.is_relative_to(data_dir) else path
        checked += 1
        if not path.is_file():
            problems.append(f"{shown} is missing (listed in {manifest.relative_to(data_dir)})")
        elif _sha256(path) != digest.strip():
            problems.append(f"{shown} does not match its checksum in {manifest.relative_to(data_dir)}")
    return checked, problems


PREPARED = {  # table, domain file, reference domain name, must equal the paper's
    "acs": ("acs/recon-synth/acs.csv", "acs/recon-synth/acs-domain.json", True),
    "fire": ("fire/recon-synth/fire.csv", "fire/recon-synth/fire-domain.json", False),
}


def verify(data_dir: Path, names: list[str]) -> tuple[list[str], list[str]]:
    """(lines of what was checked, problems): checksum manifests, then the prepared tables' domains."""
    if not data_dir.is_dir():
        raise DataError(f"data_dir {data_dir} is not a folder; fetch something into it first "
                        f"(python -m pipeline.data fetch ... --data-dir {data_dir}).")
    lines, problems = [], []
    folders = {"rockyou": "passwords"}
    manifests = [data_dir / "SHA256SUMS"] if not names else []
    manifests += [data_dir / folders.get(n, n) / "SHA256SUMS.fetched" for n in (names or SOURCES)]
    for manifest in manifests:
        if manifest.is_file():
            checked, found = _check_manifest(data_dir, manifest)
            problems += found
            lines.append(f"{manifest.relative_to(data_dir)}: {checked - len(found)} of {checked} files match")
        elif names:
            problems.append(f"{manifest.parent.relative_to(data_dir)} was not fetched into {data_dir} "
                            f"(no {manifest.name}); run python -m pipeline.data fetch {manifest.parent.name}")
    for name, (table, domain_file, strict) in PREPARED.items():
        if names and name not in names or not (data_dir / table).is_file():
            continue
        domain = json.loads((data_dir / domain_file).read_text())
        found = check_table(data_dir / table, domain)
        diff = domain_differences(domain, PAPER_DOMAINS[name])
        if strict and diff:
            found.append(f"{domain_file} differs from the paper's domain ({'; '.join(diff)})")
        problems += found
        lines.append(f"{table}: codes within {domain_file}" + (" (with problems)" if found else "")
                     + ("" if not diff else f"; domain differs from the paper's in {len(diff)} columns"))
    if not lines and not problems:
        problems.append(f"{data_dir} holds no SHA256SUMS and nothing fetched; there is nothing to verify")
    return lines, problems


# ---------------------------------------------------------------------------------------------
# CLI

def default_data_dir() -> Path:
    """The experiments' default data folder (stages.prior.base.default_data_dir, also conf/config.yaml's)."""
    from stages.prior.base import default_data_dir as default

    return default().absolute()


def _parse_urls(pairs: list[str]) -> dict[str, str]:
    urls = {}
    for pair in pairs:
        name, sep, url = pair.partition("=")
        if not sep or name not in SOURCES or not url:
            raise DataError(f"--url must be NAME=URL with NAME one of {sorted(SOURCES)}, got {pair!r}.")
        urls[name] = url
    return urls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.data", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    fetch_p = sub.add_parser("fetch", help="download, prepare and check datasets into data_dir",
                             formatter_class=argparse.RawDescriptionHelpFormatter,
                             epilog="datasets:\n" + "\n".join(f"  {s.name:8} {s.describe}\n           from {s.base_url}"
                                                               for s in SOURCES.values()))
    fetch_p.add_argument("names", nargs="+", metavar="NAME", choices=[*SOURCES, "all"],
                         help=f"one or more of {', '.join(SOURCES)}, or all")
    fetch_p.add_argument("--url", action="append", default=[], metavar="NAME=URL",
                         help="a base URL in place of NAME's public source (also $ADVBOUNDS_URL_<NAME>)")
    fetch_p.add_argument("--no-progress", action="store_true", help="no progress bar")
    verify_p = sub.add_parser("verify", help="re-check checksums and the prepared tables' domains")
    verify_p.add_argument("names", nargs="*", metavar="NAME",
                          help=f"only these of {', '.join(SOURCES)} (default: every manifest in data_dir)")
    for p in (fetch_p, verify_p):
        p.add_argument("--data-dir", type=Path, default=None,
                       help=f"where the data go (default: ${DATA_ENV}, else ../shared/data next to the repository)")
    args = parser.parse_args(argv)
    data_dir = (args.data_dir.expanduser().absolute() if args.data_dir else default_data_dir())
    from pipeline.io import command

    return command(lambda: _run(args, data_dir), (DataError,), 1,
                   "error: interrupted; run the same command again to resume the downloads (.part files).")


def _run(args, data_dir: Path) -> int:
    """The fetch or verify command (main's body)."""
    if args.command == "verify":
        unknown = [n for n in args.names if n not in SOURCES]
        if unknown:
            raise DataError(f"verify takes dataset names among {', '.join(SOURCES)}, got {unknown[0]!r}.")
        lines, problems = verify(data_dir, list(dict.fromkeys(args.names)))
        for line in lines:
            print(line)
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return 1 if problems else 0
    urls = _parse_urls(args.url)
    names = list(SOURCES) if "all" in args.names else list(dict.fromkeys(args.names))
    if data_dir.exists() and not data_dir.is_dir():
        raise DataError(f"--data-dir {data_dir} is a file; give a folder.")
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"--data-dir {data_dir} cannot be created ({exc.strerror}); give a writable folder "
                        f"(--data-dir or ${DATA_ENV}).") from None
    if not os.access(data_dir, os.W_OK):
        raise DataError(f"--data-dir {data_dir} is not writable; give a writable folder (--data-dir or ${DATA_ENV}).")
    failed = 0
    for name in names:
        source = SOURCES[name]
        try:
            for note in source.fetch(source, data_dir, source.url(urls.get(name)), not args.no_progress):
                print(note)
        except DataError as exc:
            print(f"error: {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
