"""The curator's private ledger: what composing later releases needs, kept out of the public files.

``distpriv release --out DIR`` writes, next to the public ``release.json`` and
report, a folder ``DIR/private/`` (mode 0700, files 0600) labelled not for
publication:

* ``ledger.json`` — the secret (protected predicate, pairs Ψ, framework), and
  the *chain*: every release this one was composed with, itself last, each
  with its own (ε, δ), mechanism, whether its f_θ model fixes F(Data) given θ
  (Prop. A.4's condition), its randomness (operating-system entropy, or the
  ``--seed`` that makes its noise reproducible), its row count, its normalised
  column names and its cell-hash file; the composed total; the SHA-256 of the
  public ``release.json``; and an HMAC-SHA256 of all of it;
* ``cells-<id>.npy`` — the (rows, columns) uint64 keyed hashes of the
  normalised cells of each release of the chain
  (:mod:`distpriv.release.fingerprints`), so later releases can detect shared
  rows by content on the columns both tables hold.

**The MAC key** lives outside every ``--out`` folder, in the curator's own
configuration (:func:`ledger_key_path`): ``$DISTPRIV_HOME/ledger.key`` when
``DISTPRIV_HOME`` is set, else ``$XDG_CONFIG_HOME/distpriv/ledger.key``, else
``~/.config/distpriv/ledger.key``; it is created (32 random bytes, hex, mode
0600, folder 0700) on first use. An edited ledger cannot be re-signed without
it — recomputing an unkeyed hash after setting ε 1 → 1e-9 is refused — so
composing later releases needs the same key: keep it (and back it up) with
the curator, never with the published files.

:func:`read_ledger` validates a ledger completely (format, schema, ranges:
finite ε > 0, 0 <= δ < 1; the MAC; the cell files and their hashes; the
composed total against the chain) and raises a one-line
:class:`~distpriv.errors.InvalidParameterError` naming ``--previous`` for any
missing, malformed, edited or foreign ledger.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..data.fingerprint import CELL_SCHEME
from ..errors import InvalidParameterError, arg
from .fingerprints import KEY_LENGTH, row_sums

FORMAT = "distpriv-ledger"
VERSION = 2
#: Environment variable naming the folder of the ledger key (tests point it at a temporary folder).
HOME_ENV = "DISTPRIV_HOME"
KEY_FILE = "ledger.key"
PRIVATE_DIR = "private"
LEDGER_FILE = "ledger.json"
NOTICE = (
    "PRIVATE - NOT FOR PUBLICATION. This folder is the curator's record for composing later releases "
    "(distpriv release --previous). It holds keyed fingerprints of every row of the released data and the keys "
    "that make them testable: publishing it reveals which records were used."
)
_ID_RE = re.compile(r"^[0-9a-f]{32}$")
_HEX64_RE = re.compile(r"^[0-9a-f]{64}$")
_TOP_KEYS = {"format", "version", "notice", "release", "framework", "protect", "pairs", "releases", "composed",
             "public_sha256", "key_id", "mac"}
_ENTRY_KEYS = {"id", "epsilon", "delta", "mechanism", "deterministic", "rows", "randomness", "cells"}
_CELL_KEYS = {"file", "key", "sha256", "rows", "columns", "scheme"}
_RANDOM_KEYS = {"source", "seed"}
_COMPOSED_KEYS = {"epsilon", "delta", "propositions"}


@dataclass(frozen=True, eq=False)
class ChainEntry:
    """One release of a ledger's chain.

    ``cells``: (rows, len(columns)) keyed hashes of its normalised cells; ``randomness``: ``"os"`` or
    ``"seeded"`` (then ``seed`` is the seed).
    """

    id: str
    epsilon: float
    delta: float
    mechanism: str
    deterministic: bool
    rows: int
    fingerprint_key: str
    cells: NDArray[np.uint64]
    columns: tuple[str, ...]
    randomness: str = "os"
    seed: int | None = None
    #: record-level DP of this release: {"epsilon", "delta", "mu"} (:mod:`distpriv.release.ledger_record`)
    record: dict[str, float] | None = None

    @property
    def fingerprints(self) -> NDArray[np.uint64]:
        """Sorted whole-row identities (every column)."""
        return np.sort(row_sums(self.cells))

    @property
    def seeded(self) -> bool:
        return self.randomness != "os"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "epsilon": self.epsilon, "delta": self.delta, "mechanism": self.mechanism,
                "deterministic": self.deterministic, "rows": self.rows,
                "randomness": {"source": self.randomness, "seed": self.seed},
                "cells": {"file": _cells_name(self.id), "key": self.fingerprint_key, "scheme": CELL_SCHEME,
                          "sha256": _npy_sha(self.cells), "rows": int(self.cells.shape[0]),
                          "columns": list(self.columns)},
                **({} if self.record is None else {"record": dict(self.record)})}


@dataclass(frozen=True, eq=False)
class Ledger:
    """A validated ledger (of a folder read with :func:`read_ledger`, or about to be written)."""

    folder: Path | None
    release: str
    framework: str
    protect: str
    pairs: tuple[tuple[float, float], ...]
    chain: tuple[ChainEntry, ...]
    epsilon: float
    delta: float
    propositions: tuple[str, ...]
    public_sha256: str | None

    @property
    def own(self) -> ChainEntry:
        """The ledger's own release (last in its chain)."""
        return self.chain[-1]


def _cells_name(release_id: str) -> str:
    return f"cells-{release_id}.npy"


def _npy_parts(arr: NDArray[np.uint64]) -> tuple[bytes, memoryview]:
    """The ``.npy`` file of ``arr`` as np.save writes it (format 1.0 header, then the C-order little-endian
    data), as its header and a view of the data: no copy of a large cell array (issue 26)."""
    import io

    fortran = arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous and arr.dtype == np.dtype("<u8")
    data = arr if fortran else np.ascontiguousarray(arr, dtype="<u8")  # a column-major array is saved as such
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, np.lib.format.header_data_from_array_1_0(data))
    flat = data.T.reshape(-1) if fortran else data.reshape(-1)  # the bytes in the header's order, no copy
    return buf.getvalue(), memoryview(flat.view(np.uint8).data)


def _npy_sha(arr: NDArray[np.uint64]) -> str:
    header, data = _npy_parts(arr)
    digest = hashlib.sha256(header)
    digest.update(data)
    return digest.hexdigest()


def _canonical(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode()


def ledger_key_path() -> Path:
    """Where the ledger MAC key lives: ``$DISTPRIV_HOME/ledger.key``, else ``$XDG_CONFIG_HOME/distpriv/ledger.key``,
    else ``~/.config/distpriv/ledger.key`` (never inside an ``--out`` folder)."""
    home = os.environ.get(HOME_ENV)
    if home:
        return Path(home).expanduser() / KEY_FILE
    config = os.environ.get("XDG_CONFIG_HOME")
    base = Path(config).expanduser() if config else Path.home() / ".config"
    return base / "distpriv" / KEY_FILE


def ledger_key(*, create: bool) -> bytes:
    """The curator's ledger MAC key (32 bytes), created with mode 0600 on first use when ``create``."""
    path = ledger_key_path()
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        if not create:
            raise InvalidParameterError(
                f"no ledger key at {path}: the ledger's MAC cannot be checked (set {HOME_ENV} to the folder "
                "holding the key the earlier release was written with)", argument="previous"
            ) from None
        return _create_key(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidParameterError(f"ledger key: cannot read {path} ({type(exc).__name__})") from None
    if not re.fullmatch(r"[0-9a-f]{64}", text):
        raise InvalidParameterError(f"ledger key: {path} is not a distpriv ledger key (64 hex digits)")
    return bytes.fromhex(text)


def _create_key(path: Path) -> bytes:
    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # created meanwhile by another release
        return ledger_key(create=False)
    except OSError as exc:
        raise InvalidParameterError(f"ledger key: cannot create {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(key.hex() + "\n")
    return key


def _key_id(key: bytes) -> str:
    return hashlib.sha256(b"distpriv-ledger-key-id\x1f" + key).hexdigest()[:16]


def _mac(body: dict[str, Any], key: bytes) -> str:
    """HMAC-SHA256 of the canonical JSON of every field but ``mac``."""
    return hmac.new(key, _canonical({k: v for k, v in body.items() if k != "mac"}), hashlib.sha256).hexdigest()


def _write_private(path: Path, data: bytes, *more: memoryview) -> None:
    """Write a new file with mode 0600 (whatever the umask): ``data`` then each of ``more``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        for part in more:
            fh.write(part)
    os.chmod(path, 0o600)


def composed_total(chain: Sequence[ChainEntry]) -> tuple[float, float]:
    """(Σ ε, min(1, Σ δ)) over the chain (basic composition, Props. A.4/A.5)."""
    return math.fsum(e.epsilon for e in chain), min(1.0, math.fsum(e.delta for e in chain))


def write_ledger(out: Path, ledger: Ledger) -> Path:
    """Write ``out/private/ledger.json`` (mode 0600, folder 0700) and the chain's cell files; returns the ledger path.

    The ledger is signed with the curator's key (:func:`ledger_key`, created on first use), which must not lie
    inside ``out``.
    """
    folder = Path(out) / PRIVATE_DIR
    key_path = ledger_key_path()
    top = Path(os.path.abspath(out))
    if top == Path(os.path.abspath(key_path)).parent or top in Path(os.path.abspath(key_path)).parents:
        raise InvalidParameterError(
            f"the ledger key {key_path} would be inside the published folder; keep {HOME_ENV} elsewhere", argument="out"
        )
    key = ledger_key(create=True)
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    _write_private(folder / "README.txt", (NOTICE + "\n").encode("utf-8"))
    for entry in ledger.chain:
        _write_private(folder / _cells_name(entry.id), *_npy_parts(entry.cells))
    body: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "notice": NOTICE,
        "release": ledger.release,
        "framework": ledger.framework,
        "protect": ledger.protect,
        "pairs": [[float(a), float(b)] for a, b in ledger.pairs],
        "releases": [e.to_json() for e in ledger.chain],
        "composed": {"epsilon": ledger.epsilon, "delta": ledger.delta, "propositions": list(ledger.propositions)},
        "public_sha256": ledger.public_sha256,
        "key_id": _key_id(key),
    }
    body["mac"] = _mac(body, key)
    path = folder / LEDGER_FILE
    _write_private(path, (json.dumps(body, indent=1, sort_keys=True, allow_nan=False) + "\n").encode("utf-8"))
    return path


# --------------------------------------------------------------------------- reading
class _Bad(Exception):
    pass


def _number(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Bad(f"{what} is not a number ({v!r})")
    x = float(v)
    if not math.isfinite(x):
        raise _Bad(f"{what} = {x} is not finite")
    return x


def _keys(d: Any, expected: set[str], what: str) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise _Bad(f"{what} is not an object")
    missing, extra = sorted(expected - set(d)), sorted(set(d) - expected)
    if missing:
        raise _Bad(f"{what} lacks {missing[0]!r}")
    if extra:
        raise _Bad(f"{what} has an unknown field {extra[0]!r}")
    return d


def _entry(raw: Any, folder: Path, i: int) -> ChainEntry:
    e = _keys(raw, _ENTRY_KEYS | ({"record"} if isinstance(raw, dict) and "record" in raw else set()),
              f"release {i + 1} of the chain")
    from .ledger_record import parse_record

    try:
        record = parse_record(e.get("record"), f"release {i + 1}")
    except ValueError as exc:
        raise _Bad(str(exc)) from None
    rid = e["id"]
    if not isinstance(rid, str) or not _ID_RE.match(rid):
        raise _Bad(f"release {i + 1}: malformed id")
    eps = _number(e["epsilon"], f"release {i + 1}: ε")
    if eps <= 0:
        raise _Bad(f"release {i + 1}: ε = {eps} must be > 0")
    delta = _number(e["delta"], f"release {i + 1}: δ")
    if not 0.0 <= delta < 1.0:
        raise _Bad(f"release {i + 1}: δ = {delta} must be in [0, 1)")
    if not isinstance(e["mechanism"], str) or not e["mechanism"]:
        raise _Bad(f"release {i + 1}: malformed mechanism")
    if not isinstance(e["deterministic"], bool):
        raise _Bad(f"release {i + 1}: 'deterministic' must be true or false")
    rows = e["rows"]
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise _Bad(f"release {i + 1}: rows must be a positive integer")
    rnd = _keys(e["randomness"], _RANDOM_KEYS, f"release {i + 1}: randomness")
    seed = rnd["seed"]
    if rnd["source"] == "os" and seed is None:
        pass
    elif rnd["source"] == "seeded" and isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0:
        pass
    else:
        raise _Bad(f"release {i + 1}: randomness must be {{'source': 'os', 'seed': null}} or a seeded source with "
                   "its seed")
    if isinstance(e["cells"], dict) and e["cells"].get("scheme", None) != CELL_SCHEME:
        raise _Bad(f"release {i + 1}: cells of scheme {e['cells'].get('scheme')!r}, not "
                   f"{CELL_SCHEME!r} (written by another distpriv version: rows cannot be compared)")
    fp = _keys(e["cells"], _CELL_KEYS, f"release {i + 1}: cells")
    key = fp["key"]
    if not isinstance(key, str) or len(key) != KEY_LENGTH or not key.isascii():
        raise _Bad(f"release {i + 1}: malformed fingerprint key")
    if fp["file"] != _cells_name(rid):
        raise _Bad(f"release {i + 1}: unexpected cell file name {fp['file']!r}")
    if not isinstance(fp["sha256"], str) or not _HEX64_RE.match(fp["sha256"]):
        raise _Bad(f"release {i + 1}: malformed cell file hash")
    count = fp["rows"]
    if isinstance(count, bool) or not isinstance(count, int) or count != rows:
        raise _Bad(f"release {i + 1}: cell rows do not match its rows")
    columns = fp["columns"]
    if (not isinstance(columns, list) or not columns or not all(isinstance(c, str) for c in columns)
            or len(set(columns)) != len(columns)):
        raise _Bad(f"release {i + 1}: malformed column names")
    path = folder / fp["file"]
    try:
        data = path.read_bytes()
    except OSError:
        raise _Bad(f"cell file {fp['file']} is missing") from None
    if hashlib.sha256(data).hexdigest() != fp["sha256"]:
        raise _Bad(f"cell file {fp['file']} was modified (SHA-256 mismatch)")
    import io

    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError):
        raise _Bad(f"cell file {fp['file']} is not a NumPy array") from None
    if arr.dtype != np.dtype("<u8") or arr.shape != (rows, len(columns)):
        raise _Bad(f"cell file {fp['file']} is not a uint64 array of {rows} rows and {len(columns)} columns")
    return ChainEntry(rid, eps, delta, e["mechanism"], e["deterministic"], rows, key, arr, tuple(columns),
                      rnd["source"], seed, record)


def _parse(folder: Path, doc: Any) -> Ledger:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise _Bad("it is not a distpriv ledger")
    if doc.get("version") == 1:
        raise _Bad("it is a version-1 ledger (unkeyed checksum, whole-row fingerprints), which can be neither trusted "
                   "nor compared by content; release again with this version to start a new chain")
    if doc.get("version") != VERSION:
        raise _Bad(f"unsupported ledger version {doc.get('version')!r} (expected {VERSION})")
    d = _keys(doc, _TOP_KEYS, "the ledger")
    for k in ("release", "framework", "protect", "notice"):
        if not isinstance(d[k], str) or not d[k]:
            raise _Bad(f"malformed {k!r}")
    pairs_raw = d["pairs"]
    if not isinstance(pairs_raw, list) or not pairs_raw:
        raise _Bad("'pairs' must be a non-empty list")
    pairs: list[tuple[float, float]] = []
    for p in pairs_raw:
        if not isinstance(p, list) or len(p) != 2:
            raise _Bad("each pair must be two property values")
        a, b = (_number(v, "a pair value") for v in p)
        if not (0.0 <= a <= 1.0 and 0.0 <= b <= 1.0) or a == b:
            raise _Bad(f"pair ({a}, {b}) is not two different values in [0, 1]")
        pairs.append((a, b))
    chain_raw = d["releases"]
    if not isinstance(chain_raw, list) or not chain_raw:
        raise _Bad("'releases' must be a non-empty list")
    chain = tuple(_entry(e, folder, i) for i, e in enumerate(chain_raw))
    ids = [e.id for e in chain]
    if len(set(ids)) != len(ids):
        raise _Bad("a release appears twice in its chain")
    if chain[-1].id != d["release"]:
        raise _Bad("the ledger's own release is not last in its chain")
    comp = _keys(d["composed"], _COMPOSED_KEYS, "'composed'")
    eps = _number(comp["epsilon"], "composed ε")
    delta = _number(comp["delta"], "composed δ")
    if eps <= 0 or not 0.0 <= delta <= 1.0:
        raise _Bad(f"composed (ε, δ) = ({eps}, {delta}) is out of range")
    want_e, want_d = composed_total(chain)
    if not (math.isclose(eps, want_e, rel_tol=1e-12) and math.isclose(delta, want_d, rel_tol=1e-12, abs_tol=1e-300)):
        raise _Bad(f"composed (ε, δ) = ({eps}, {delta}) is not the sum over its chain ({want_e}, {want_d})")
    props = comp["propositions"]
    if not isinstance(props, list) or not all(p in ("A.4", "A.5") for p in props):
        raise _Bad("malformed 'propositions'")
    pub = d["public_sha256"]
    if pub is not None and (not isinstance(pub, str) or not _HEX64_RE.match(pub)):
        raise _Bad("malformed 'public_sha256'")
    key = ledger_key(create=False)
    if d["key_id"] != _key_id(key):
        raise _Bad(f"it was signed with another ledger key than {ledger_key_path()} (set {HOME_ENV} to the folder "
                   "of the key it was written with)")
    if not isinstance(d["mac"], str) or not hmac.compare_digest(d["mac"], _mac(d, key)):
        raise _Bad("its MAC does not match its content (the ledger was edited)")
    return Ledger(folder, d["release"], d["framework"], d["protect"], tuple(pairs), chain, eps, delta,
                  tuple(props), pub)


def read_ledger(folder: str | Path) -> Ledger:
    """Read and validate the private ledger of an earlier release's ``--out`` folder (see the module docstring)."""
    top = Path(folder)
    path = top / PRIVATE_DIR / LEDGER_FILE
    if not path.is_file():
        raise InvalidParameterError(
            f"{top} has no private ledger ({PRIVATE_DIR}/{LEDGER_FILE}); give the {arg('out')} folder of an "
            "earlier 'distpriv release'", argument="previous"
        )
    try:
        doc = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
        ledger = _parse(path.parent, doc)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidParameterError(f"{path} is not a readable ledger ({type(exc).__name__})", argument="previous") from None
    except _Bad as exc:
        raise InvalidParameterError(f"{path} is invalid: {exc}", argument="previous") from None
    public = top / "release.json"
    if ledger.public_sha256 is not None and public.is_file():
        if hashlib.sha256(public.read_bytes()).hexdigest() != ledger.public_sha256:
            raise InvalidParameterError(
                f"{public} does not belong to the ledger in {path.parent} (SHA-256 mismatch)", argument="previous"
            )
    return Ledger(top, ledger.release, ledger.framework, ledger.protect, ledger.pairs, ledger.chain, ledger.epsilon,
                  ledger.delta, ledger.propositions, ledger.public_sha256)


def _reject_constant(name: str) -> float:
    raise _Bad(f"the ledger contains {name}, which is not a number")
