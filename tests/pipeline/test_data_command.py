"""`python -m pipeline.data fetch|verify` against a small HTTP server on 127.0.0.1 (nothing leaves the machine).

The server serves samples built from tests/data in the layout of each public source, supports HTTP
Range (as the real servers do) and can cut a transfer short, so the tests run the real download,
resume, unpacking, preparation and checks.
"""
from __future__ import annotations

import csv
import hashlib
import http.server
import io
import json
import math
import os
import socket
import subprocess
import sys
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from pipeline import data

TEST_DATA = Path(__file__).resolve().parents[1] / "data"
REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------------
# The local server.

class _Handler(http.server.SimpleHTTPRequestHandler):
    """Static files with single-range `Range: bytes=N-` support; `cut_after` bytes, then it hangs up."""

    cut_after: int | None = None
    requests: list = []

    def log_message(self, *args):  # keep pytest's output clean
        pass

    def send_head(self):
        path = Path(self.translate_path(self.path))
        type(self).requests.append((self.path, self.headers.get("Range")))
        if not path.is_file():
            self.send_error(404, "not found")
            return None
        size = path.stat().st_size
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            start = int(rng[6:].split("-")[0])
            if start >= size:
                self.send_error(416, "range not satisfiable")
                return None
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        else:
            self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size - start))
        self.end_headers()
        f = open(path, "rb")
        f.seek(start)
        if type(self).cut_after is not None:
            body = f.read(type(self).cut_after)
            f.close()
            return io.BytesIO(body)
        return f


@pytest.fixture
def server(tmp_path):
    """(root folder, base URL): files put under root are served at base/<relative path>."""
    root = tmp_path / "www"
    root.mkdir()
    handler = type("Handler", (_Handler,), {"cut_after": None, "requests": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: handler(*a, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def _closed_port_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


@pytest.fixture(autouse=True)
def _no_internet(monkeypatch):
    """Any source a test forgets to point at the local server fails fast on a closed local port."""
    for name in data.SOURCES:
        monkeypatch.setenv(data._url_env(name), _closed_port_url())


def _fetch(name, base, data_dir, capsys, *extra):
    code = data.main(["fetch", name, "--data-dir", str(data_dir), "--url", f"{name}={base}", "--no-progress", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


# ---------------------------------------------------------------------------------------------
# Samples in each source's layout.

#: Each ACSEmployment feature's values in the 2018 PUMS data dictionary (None: blank, N/A). The
#: sample cycles through them, so its domain is the paper's.
ACS_VALUES = {
    "AGEP": [3, 14, 25, 36, 47, 58, 69, 71, 85, 94], "SCHL": [None, *range(1, 25)], "MAR": [1, 2, 3, 4, 5],
    "RELP": list(range(18)), "DIS": [1, 2], "ESP": [None, *range(1, 9)], "CIT": [1, 2, 3, 4, 5],
    "MIG": [None, 1, 2, 3], "MIL": [None, 1, 2, 3, 4], "ANC": [1, 2, 3, 4, 8], "NATIVITY": [1, 2], "DEAR": [1, 2],
    "DEYE": [1, 2], "DREM": [None, 1, 2], "SEX": [1, 2], "RAC1P": list(range(1, 10)),
}


def _psam_rows(values=ACS_VALUES, n=30):
    """A psam_p06.csv-shaped table: person-file columns around the 16 features, one row per person."""
    cols = ["RT", "SERIALNO", "SPORDER", "PUMA", "ST", "PWGTP", *values, "ESR", "PINCP", "SOCP", "NAICSP"]
    rows = []
    for i in range(n):
        row = {"RT": "P", "SERIALNO": f"2018GQ{i:07d}", "SPORDER": 1, "PUMA": 3701 + i % 3, "ST": 6, "PWGTP": 10 + i,
               "ESR": [1, 6, ""][i % 3], "PINCP": 1000 * i, "SOCP": "", "NAICSP": ""}
        row.update({c: ("" if v[i % len(v)] is None else v[i % len(v)]) for c, v in values.items()})
        rows.append(row)
    return cols, rows


def _serve_acs(root: Path, values=ACS_VALUES) -> list[dict]:
    cols, rows = _psam_rows(values)
    text = io.StringIO()
    writer = csv.DictWriter(text, cols, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    folder = root / "acs" / "2018" / "1-Year"
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "csv_pca.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("psam_p06.csv", text.getvalue())
        z.writestr("ACS2018_PUMS_README.pdf", b"%PDF-1.4 not a real pdf")
    return rows


FIRE_RAW = TEST_DATA / "fire" / "raw" / "sf_fire_calls_2020-04-07_to_2020-04-20.csv"


def _serve_fire(root: Path) -> None:
    (root / "fire").mkdir()
    (root / "fire" / "rows.csv").write_bytes(FIRE_RAW.read_bytes())


def _rockyou_text() -> bytes:
    """A `uniq -c` list holding the 157 nine-digit passwords of tests/data, in count order, among others."""
    with open(TEST_DATA / "passwords" / "rockyou-top100k-9digit-withcount.csv", newline="") as f:
        nine = [(int(r["count"]), r["password"]) for r in csv.DictReader(f)]
    others = [(290729, "123456"), (79076, "12345"), (59462, "password"), (20000, "iloveyou 2"), (100, "1234567890")]
    lines = sorted(nine + others, key=lambda r: -r[0])
    return "".join(f"{c:>7} {p}\n" for c, p in lines).encode()


def _serve_enron(root: Path) -> list[str]:
    (root / "enron").mkdir()
    src = TEST_DATA / "enron" / "mini-enron"
    with tarfile.open(root / "enron" / "enron_mail_20150507.tar.gz", "w:gz") as tar:
        tar.add(src, arcname="maildir")
    return _files(src)


# ---------------------------------------------------------------------------------------------
# fetch + prepare + verify, end to end.

def test_acs_fetch_prepares_the_papers_table_and_verifies(server, tmp_path, capsys):
    root, base, _ = server
    rows = _serve_acs(root)
    data_dir = tmp_path / "data"
    code, out, err = _fetch("acs", f"{base}/acs", data_dir, capsys)
    assert code == 0, err
    assert "domain equals the paper's" in out
    prepared = data_dir / "acs" / "recon-synth"
    domain = json.loads((prepared / "acs-domain.json").read_text())
    assert domain == data.PAPER_DOMAINS["acs"]
    assert json.loads((data_dir / data.REFERENCE_FILES["acs"]).read_text()) == data.PAPER_DOMAINS["acs"]
    codes = json.loads((prepared / "acs-codes.json").read_text())
    with open(prepared / "acs.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == len(rows) and list(table[0]) == data.ACS_FEATURES
    for got, raw in zip(table, rows):
        # Decoding gives back folktables' value: AGEP // 10, N/A -> 0 (its nan_to_num), else the value.
        assert codes["AGEP"][got["AGEP"]] == raw["AGEP"] // 10
        for col in ("SCHL", "ESP", "RELP", "ANC", "RAC1P"):
            assert codes[col][got[col]] == (0 if raw[col] == "" else raw[col])
    # Codes follow the sorted values: the first code is the smallest value.
    assert codes["SCHL"]["0"] == 0 and codes["SCHL"]["24"] == 24 and codes["ANC"]["4"] == 8
    # The zip is gone (as folktables does), the person file stays in folktables' layout.
    assert (data_dir / "acs" / "raw" / "2018" / "1-Year" / "psam_p06.csv").is_file()
    assert not list(data_dir.rglob("*.zip")) and not list(data_dir.rglob("*.part")) and not list(data_dir.rglob("*.tmp"))

    assert data.main(["verify", "acs", "--data-dir", str(data_dir)]) == 0
    out, err = capsys.readouterr()
    assert "acs/SHA256SUMS.fetched: 5 of 5 files match" in out and err == ""


def test_acs_with_a_domain_unlike_the_papers_is_refused_and_writes_nothing(server, tmp_path, capsys):
    root, base, _ = server
    _serve_acs(root, {**ACS_VALUES, "MIG": [1, 2, 3]})  # no N/A: MIG has 3 values, the paper 4
    data_dir = tmp_path / "data"
    code, out, err = _fetch("acs", f"{base}/acs", data_dir, capsys)
    assert code == 1
    assert err.count("\n") == 1 and "MIG: 3 (paper 4)" in err and "nothing was written" in err
    assert not (data_dir / "acs" / "recon-synth").exists() and not (data_dir / "acs" / "SHA256SUMS.fetched").exists()


def test_fire_fetch_keeps_the_papers_columns_coded_by_sorted_value(server, tmp_path, capsys):
    import pandas as pd

    root, base, _ = server
    _serve_fire(root)
    data_dir = tmp_path / "data"
    code, out, err = _fetch("fire", f"{base}/fire", data_dir, capsys)
    assert code == 0, err
    assert "domain differs from the paper's" in out  # 40 rows cannot show the paper's 31 call types
    prepared = data_dir / "fire" / "recon-synth"
    table = pd.read_csv(prepared / "fire.csv")
    domain = json.loads((prepared / "fire-domain.json").read_text())
    codes = json.loads((prepared / "fire-codes.json").read_text())
    raw = pd.read_csv(FIRE_RAW)
    assert list(table.columns) == data.FIRE_COLUMNS == list(domain) and len(table) == len(raw) == 40
    for col in data.FIRE_COLUMNS:
        assert table[col].between(0, domain[col] - 1).all() and table[col].nunique() == domain[col]
        decoded = [codes[col][str(c)] for c in table[col]]
        expected = [None if isinstance(v, float) and math.isnan(v) else v for v in raw[col].tolist()]
        assert decoded == expected, col
        known = [v for v in codes[col].values() if v is not None]
        assert known == sorted(known), col  # codes follow the sorted original values
    assert codes["ALS Unit"] == {"0": False, "1": True}
    assert data.main(["verify", "fire", "--data-dir", str(data_dir)]) == 0
    capsys.readouterr()


def test_enron_fetch_unpacks_the_maildir(server, tmp_path, capsys):
    root, base, _ = server
    messages = _serve_enron(root)
    data_dir = tmp_path / "data"
    code, out, err = _fetch("enron", f"{base}/enron", data_dir, capsys)
    assert code == 0, err
    assert "2 mailboxes, 48 messages" in out
    maildir = data_dir / "enron" / "maildir"
    assert _files(maildir) == messages
    first = messages[0]
    assert (maildir / first).read_bytes() == (TEST_DATA / "enron" / "mini-enron" / first).read_bytes()
    assert not (data_dir / "enron" / ".unpack.tmp").exists()


def test_rockyou_fetch_derives_the_nine_digit_counts_byte_for_byte(server, tmp_path, capsys):
    root, base, _ = server
    (root / "rockyou").mkdir()
    (root / "rockyou" / "rockyou-original.txt").write_bytes(_rockyou_text())
    data_dir = tmp_path / "data"
    code, out, err = _fetch("rockyou", f"{base}/rockyou", data_dir, capsys)
    assert code == 0, err
    assert "160 all-digit and 157 nine-digit" in out and "custom source" in out
    nine = data_dir / "passwords" / "rockyou-top100k-9digit-withcount.csv"
    # The same bytes as the published extract (whose sha256 the pinned source is checked against).
    shipped = TEST_DATA / "passwords" / "rockyou-top100k-9digit-withcount.csv"
    assert nine.read_bytes() == shipped.read_bytes()
    assert hashlib.sha256(nine.read_bytes()).hexdigest() == data.ROCKYOU_SHA256["passwords/" + nine.name]
    with open(data_dir / "passwords" / "rockyou-top100k-numeric-withcount.csv", newline="") as f:
        numeric = list(csv.DictReader(f))
    assert [r["password"] for r in numeric[:2]] == ["123456", "12345"] and len(numeric) == 157 + 3


def test_gpt2_fetch_checks_what_from_pretrained_reads(server, tmp_path, capsys):
    tokenizers = pytest.importorskip("tokenizers")
    root, base, _ = server
    folder = root / "gpt2"
    folder.mkdir()
    # A tiny byte-level BPE and a 2-float safetensors file in the Hugging Face GPT-2 layout.
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(["Hello world, hello world"], vocab_size=260, show_progress=False)
    bpe.save_model(str(folder))
    bpe.save(str(folder / "tokenizer.json"))
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    (folder / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + bytes(8))
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 1}))
    (folder / "generation_config.json").write_text("{}")
    (folder / "tokenizer_config.json").write_text("{}")
    data_dir = tmp_path / "data"
    code, out, err = _fetch("gpt2", f"{base}/gpt2", data_dir, capsys)
    assert code == 0, err
    assert _files(data_dir / "gpt2") == sorted([*data.GPT2_FILES, "SHA256SUMS.fetched"])
    # A truncated weights file is found by the structural check (and by verify's checksum).
    weights = data_dir / "gpt2" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-3])
    assert any("truncated" in p for p in data.check_gpt2(data_dir / "gpt2"))
    assert data.main(["verify", "gpt2", "--data-dir", str(data_dir)]) == 1
    assert "gpt2/model.safetensors does not match its checksum" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Resuming, unreachable sources, corrupted files.

def test_a_cut_download_keeps_its_part_and_the_next_run_resumes_with_a_range(server, tmp_path, capsys):
    root, base, handler = server
    (root / "rockyou").mkdir()
    served = _rockyou_text()
    (root / "rockyou" / "rockyou-original.txt").write_bytes(served)
    data_dir = tmp_path / "data"
    handler.cut_after = 1000  # the server hangs up after 1,000 bytes
    code, out, err = _fetch("rockyou", f"{base}/rockyou", data_dir, capsys)
    assert code == 1 and err.count("\n") == 1
    assert f"stopped after 1000 of {len(served)} bytes" in err and "run the same command again to resume" in err
    txt = data_dir / "passwords" / "rockyou-top100k-withcount.txt"
    part = txt.with_name(txt.name + ".part")
    assert part.read_bytes() == served[:1000] and not txt.exists()
    assert not (data_dir / "passwords" / "rockyou-top100k-9digit-withcount.csv").exists()

    handler.cut_after = None
    handler.requests.clear()
    code, out, err = _fetch("rockyou", f"{base}/rockyou", data_dir, capsys)
    assert code == 0, err
    assert handler.requests == [("/rockyou/rockyou-original.txt", "bytes=1000-")]  # only the rest was sent
    assert txt.read_bytes() == served and not part.exists()


def test_download_restarts_when_the_server_ignores_the_range(tmp_path):
    class NoRange(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    (tmp_path / "f.bin").write_bytes(b"0123456789" * 100)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: NoRange(*a, directory=str(tmp_path)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        dest = tmp_path / "out" / "f.bin"
        dest.parent.mkdir()
        dest.with_name("f.bin.part").write_bytes(b"garbage")
        data.download(f"http://127.0.0.1:{httpd.server_address[1]}/f.bin", dest, name="test", progress=False)
        assert dest.read_bytes() == b"0123456789" * 100
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_pinned_checksum_mismatch_removes_the_download(server, tmp_path):
    root, base, _ = server
    (root / "x.txt").write_bytes(b"not the file you pinned")
    dest = tmp_path / "out" / "x.txt"
    with pytest.raises(data.DataError, match=r"has sha256 .*expected 0{64}.*partial file was removed"):
        data.download(f"{base}/x.txt", dest, name="x", sha256="0" * 64, progress=False)
    assert not dest.exists() and not dest.with_name("x.txt.part").exists()


@pytest.mark.slow
def test_an_unreachable_source_is_one_sentence_nonzero_and_writes_nothing(tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    url = _closed_port_url()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-m", "pipeline.data", "fetch", "acs", "--data-dir", str(data_dir),
                             "--url", f"acs={url}"], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: acs: cannot reach {url}/2018/1-Year/csv_pca.zip")
    assert "--url acs=" in lines[0]
    assert _files(data_dir) == []


def test_a_missing_file_on_the_server_is_one_sentence(server, tmp_path, capsys):
    _, base, _ = server
    code, out, err = _fetch("enron", f"{base}/nowhere", tmp_path / "data", capsys)
    assert code == 1 and err.count("\n") == 1 and "answered HTTP 404" in err
    assert _files(tmp_path / "data") == []


def test_verify_detects_a_corrupted_or_missing_file(server, tmp_path, capsys):
    root, base, _ = server
    (root / "rockyou").mkdir()
    (root / "rockyou" / "rockyou-original.txt").write_bytes(_rockyou_text())
    data_dir = tmp_path / "data"
    assert _fetch("rockyou", f"{base}/rockyou", data_dir, capsys)[0] == 0
    assert data.main(["verify", "--data-dir", str(data_dir)]) == 0
    assert "passwords/SHA256SUMS.fetched: 3 of 3 files match" in capsys.readouterr().out

    nine = data_dir / "passwords" / "rockyou-top100k-9digit-withcount.csv"
    nine.write_text(nine.read_text().replace("76789", "76788"))
    assert data.main(["verify", "--data-dir", str(data_dir)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "passwords/rockyou-top100k-9digit-withcount.csv does not match its checksum" in err

    nine.unlink()
    assert data.main(["verify", "rockyou", "--data-dir", str(data_dir)]) == 1
    assert "rockyou-top100k-9digit-withcount.csv is missing" in capsys.readouterr().err


def test_verify_finds_codes_outside_the_domain(server, tmp_path, capsys):
    root, base, _ = server
    _serve_fire(root)
    data_dir = tmp_path / "data"
    assert _fetch("fire", f"{base}/fire", data_dir, capsys)[0] == 0
    (data_dir / "fire" / "SHA256SUMS.fetched").unlink()  # only the domain check is left to notice
    table = data_dir / "fire" / "recon-synth" / "fire.csv"
    lines = table.read_text().splitlines()
    lines[1] = "99," + lines[1].split(",", 1)[1]
    table.write_text("\n".join(lines) + "\n")
    assert data.main(["verify", "--data-dir", str(data_dir)]) == 1
    assert "column 'Call Type' has codes outside" in capsys.readouterr().err


def test_the_shipped_test_data_verifies():
    """tests/data/SHA256SUMS holds: the samples the suite reads are the ones its README describes."""
    n = len((TEST_DATA / "SHA256SUMS").read_text().splitlines())
    lines, problems = data.verify(TEST_DATA, [])
    assert problems == [] and lines == [f"SHA256SUMS: {n} of {n} files match"]


def test_bad_arguments_are_one_sentence(tmp_path, capsys):
    assert data.main(["fetch", "acs", "--url", "acs", "--data-dir", str(tmp_path)]) == 1
    assert "--url must be NAME=URL" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert data.main(["fetch", "acs", "--data-dir", str(tmp_path / "file")]) == 1
    assert "is a file" in capsys.readouterr().err
    assert data.main(["verify", "--data-dir", str(tmp_path / "nope")]) == 1
    assert "is not a folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        data.main(["fetch", "census"])
    capsys.readouterr()


# ---------------------------------------------------------------------------------------------
# The shipped samples cover what the configs read.

#: The top-level folders of the data layout (../shared/data, tests/data, what `fetch` fills).
DATA_FOLDERS = {"passwords", "acs", "fire", "enron", "gpt2", "gpt2-tokenizer"}


def _data_paths(node, where=""):
    """(config key, value) of every literal relative path into the data layout in a config tree."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _data_paths(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _data_paths(value, f"{where}[{i}]")
    elif isinstance(node, str) and "${" not in node and "/" in node and node.split("/")[0] in DATA_FOLDERS:
        yield where, node


def test_every_data_file_a_config_names_is_in_tests_data(compose_config):
    """A fresh clone runs every configured experiment on tests/data: each data path a config or the
    tabular loader names exists there (the suite once read ../shared/data and failed without it)."""
    from omegaconf import OmegaConf

    from clitools import options

    named = {}
    for group in ("experiment", "prior", "mechanism", "attack"):
        for option in options(group):
            cfg = OmegaConf.to_container(compose_config(f"{group}={option}"), resolve=False)
            named.update({value: f"{group}={option}: {key}" for key, value in _data_paths(cfg)})
    # the stand-ins; the paper's tables (FETCHED) are what `fetch` writes, not shipped
    from stages.prior.tabular import STAND_INS

    named.update({path: f"stages.prior.tabular.STAND_INS[{name!r}]" for name, paths in STAND_INS.items() for path in paths})
    assert "passwords/rockyou-top100k-9digit-withcount.csv" in named
    missing = {path: where for path, where in named.items() if not (TEST_DATA / path).exists()}
    assert missing == {}, f"named by a config but not shipped in tests/data: {missing}"
    assert os.environ["ADVBOUNDS_DATA"] == str(TEST_DATA)  # tests/conftest.py: no test reads outside the repo
