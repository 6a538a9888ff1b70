"""Tapes on object storage (``s3://``, ``gs://``, ``az://``, ``file://``, ``memory://``): the
store access, through obstore (``pip install 'streamtool[store]'``). Where each part lives is
:mod:`streamtool.core.exchange.store_layout`'s.

- :class:`StoreTape` lists a tape's entries (one listing per hex digit, at once), fetches
  recordings into the local cache, publishes an exchange (its recording, then its entry, each
  with a conditional create), and pushes, pulls, verifies and collects a tape.
- :class:`BlobCache` is the read-through cache: a recording is kept under its hash, written
  whole (a temporary file renamed), and checked against its hash whenever it is used; a file
  that does not match is fetched again, never served. Offline, the last listing of a tape and
  the recordings already fetched serve it.
- :func:`checkout` makes a tape folder of a store tape (``index.jsonl`` and its recordings,
  linked from the cache): what ``serve``, ``ls``, ``inspect`` and ``check`` read.

The endpoint and credentials of S3 come from the standard AWS variables (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``...; a plain ``http://`` endpoint is allowed) and, when the variables hold
no key, from the AWS files and profiles through boto3; Google's and Azure's from theirs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from ..exchange.store_layout import (
    SETTINGS,
    SHARDS,
    EntryRecord,
    EntryRef,
    Expiry,
    content_hash,
    golden_key,
    is_store_url,
    match_key,
    parse_entry_key,
    parse_recording_key,
    recording_key,
    split_url,
    stamp,
    view_name,
)
from ..model.records import RecordingError, os_error_text
from ..recording.tape_index import IndexEntry, rewrite_index

PARALLEL = 32  # transfers at once (measured: benchmarks/bench_store_library.py)
# a listing of up to this many objects is read page after page (1,000 a page); a larger one
# as many listings at once, one per folder of the index
SEQUENTIAL_LISTING = 10_000
_T = TypeVar("_T")
_log = logging.getLogger("streamtool.store")
_MEMORY: dict[str, Any] = {}  # memory:// stores of this process, by URL root
_MEMORY_LOCK = threading.Lock()
PULLED_NOTE = ".pulled-from"  # in a folder ``tape pull`` made: the URL it came from


class StoreError(RecordingError):
    """A store that cannot be used: one line naming the URL and why."""

    def __init__(self, url: str, message: str) -> None:
        super().__init__(url, None, message)


def _missing_library(url: str) -> StoreError:
    return StoreError(url, "tapes on object storage need obstore: pip install 'streamtool[store]'")


# where each kind of store's address and credentials are set (for the hints of the errors)
_WHERE = {
    "s3": ("AWS_ENDPOINT_URL", "set AWS_ACCESS_KEY_ID or an AWS profile"),
    "az": (
        "AZURE_STORAGE_ENDPOINT (AZURITE_BLOB_STORAGE_URL for Azurite)",
        "set AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY",
    ),
    "gs": ("the service account's gcs_base_url", "set GOOGLE_SERVICE_ACCOUNT"),
}
# the codes of refused credentials: S3's, and Azure's (Azurite's among them)
_REFUSED = (
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "AccessDenied",
    "ExpiredToken",
    "InvalidToken",
    "AuthenticationFailed",
    "AuthorizationFailure",
)


def describe_error(exc: BaseException, scheme: str = "s3") -> str:
    """One line for an obstore (or OS) error: what went wrong, without its debug dump (the
    hints name ``scheme``'s settings)."""
    text = str(exc)
    endpoint, credentials = _WHERE.get(scheme, _WHERE["s3"])
    status = re.search(r"status code: (\d{3})[^:]*", text)
    code = re.search(r"<Code>([^<]+)</Code>", text)
    if code and code.group(1) == "NoSuchBucket":
        bucket = re.search(r"<BucketName>([^<]+)</BucketName>", text)
        return f"no such bucket{f' {bucket.group(1)!r}' if bucket else ''}"
    if code and code.group(1) == "ContainerNotFound":
        return "no such container"
    if code and code.group(1) in _REFUSED:
        return f"the store refused the credentials ({code.group(1)}, HTTP {_status(status)})"
    if status:
        return f"the store answered HTTP {status.group(1)}{f' ({code.group(1)})' if code else ''}"
    low = text.lower()
    if "putmode::create" in low and "not yet implemented" in low:
        return (
            "the store is set up without conditional writes (create an object only if it is "
            "absent), which a tape's writers need"
            + (": unset AWS_CONDITIONAL_PUT" if scheme == "s3" else "")
        )
    if "connect" in low or "error sending request" in low or "dns" in low:
        return f"cannot reach the store (connection failed); check {endpoint} and the network"
    if "account must be specified" in low:
        return f"no storage account: {credentials} (AZURE_STORAGE_USE_EMULATOR=true for Azurite)"
    if "credential" in low:
        return f"no credentials for the store ({credentials})"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first[:200]


def _status(m: re.Match[str] | None) -> str:
    return m.group(1) if m else "?"


def _unreachable(exc: BaseException) -> bool:
    return describe_error(exc).startswith("cannot reach")


def _gcs_base_url() -> str:
    """The ``gcs_base_url`` of the service account file ``GOOGLE_SERVICE_ACCOUNT`` names (an
    emulator's address, as obstore documents it), else ``""``: obstore reads the file itself,
    this only tells whether its address is plain http."""
    path = os.environ.get("GOOGLE_SERVICE_ACCOUNT") or os.environ.get("GOOGLE_SERVICE_ACCOUNT_PATH")
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8") as f:
            found = json.load(f).get("gcs_base_url")
    except (OSError, ValueError, AttributeError):
        return ""  # obstore says what is wrong with the file
    return found if isinstance(found, str) else ""


def _open(url: str) -> tuple[Any, str]:
    """obstore's store for ``url``'s root and the tape's prefix in it."""
    try:
        from obstore.store import from_url
    except ImportError:
        raise _missing_library(url) from None
    try:
        root, prefix = split_url(url)
    except ValueError as exc:
        raise StoreError(url, str(exc).split(": ", 1)[-1]) from None
    scheme = root.partition("://")[0]
    retry = {"max_retries": 2, "retry_timeout": timedelta(seconds=20)}
    try:
        if scheme == "memory":
            with _MEMORY_LOCK:
                store = _MEMORY.get(root)
                if store is None:
                    store = _MEMORY[root] = from_url("memory:///")
            return store, prefix
        if scheme == "file":
            folder = root.removeprefix("file://")
            os.makedirs(folder, exist_ok=True)
            return from_url(f"file://{os.path.abspath(folder)}"), prefix
        options: dict[str, Any] = {"connect_timeout": "5s", "timeout": "60s"}
        kwargs: dict[str, Any] = {}
        if scheme == "s3":
            for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"):
                endpoint = os.environ.get(name)
                if endpoint is not None and not re.match(r"^https?://[^/]", endpoint):
                    raise StoreError(url, f"{name}={endpoint!r} is not an http(s) URL")
            endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
            if endpoint and endpoint.startswith("http://"):
                options["allow_http"] = True
            provider = _aws_files()
            if provider is not None:
                kwargs["credential_provider"] = provider
        if scheme == "gs" and _gcs_base_url().startswith("http://"):
            options["allow_http"] = True  # an emulator named by the service account file
        if scheme == "az":  # an http:// endpoint (Azurite's, when the emulator is on, always is)
            endpoint = os.environ.get("AZURE_STORAGE_ENDPOINT") or os.environ.get("AZURE_ENDPOINT")
            if endpoint and endpoint.startswith("http://"):
                options["allow_http"] = True
        store = from_url(root, client_options=options, retry_config=retry, **kwargs)  # type: ignore[call-overload]
        return store, prefix
    except StoreError:
        raise
    except OSError as exc:
        raise StoreError(url, os_error_text(exc)) from None
    except Exception as exc:  # obstore's configuration errors
        raise StoreError(url, describe_error(exc, scheme)) from None


def _aws_files() -> Any:
    """boto3's credential chain (the AWS files, profiles, SSO) when the environment holds no
    key; ``None`` when it does (obstore reads it) or boto3 is not installed."""
    if os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_WEB_IDENTITY_TOKEN_FILE"):
        return None
    try:
        from obstore.auth.boto3 import Boto3CredentialProvider
    except ImportError:
        return None
    try:
        return Boto3CredentialProvider()
    except Exception:  # no credentials anywhere: the store says so on first use
        return None


class _NotStarted(Exception):
    """A fetch not begun because another one failed."""


def run_sync(coro: Awaitable[_T]) -> _T:
    """Run ``coro`` to its end from synchronous code (in a thread of its own when an event
    loop runs here already). A :class:`StoreError` comes out new, holding nothing of the run:
    a traceback would keep the store's streams alive until the interpreter is torn down,
    where their runtime is gone (obstore aborts the process)."""
    error: StoreError | None = None
    try:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)  # type: ignore[arg-type]
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, coro).result()  # type: ignore[arg-type]
    except StoreError as exc:
        error = StoreError(exc.path, exc.message)
    except BaseException:
        _release()
        raise
    _release()
    raise error


def _release() -> None:
    """Free now what a failed run left in reference cycles (its tasks, frames and the store's
    streams): at the interpreter's end they would be freed after obstore's runtime."""
    import gc

    gc.collect()


def cache_root() -> Path:
    """Where fetched recordings are kept: ``$STREAMTOOL_CACHE``, else the user's cache folder
    (``$XDG_CACHE_HOME/streamtool``, ``~/.cache/streamtool``)."""
    base = os.environ.get("STREAMTOOL_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "streamtool"


def file_hash(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def write_whole(path: Path, data: bytes) -> None:
    """``data`` into ``path`` at once: a temporary file beside it, renamed (a reader, or a
    writer killed midway, never sees part of it). The folder is made when it is missing
    (looked for only then: a pull writes a thousand files into folders that are there)."""
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


class BlobCache:
    """Recordings by hash on local disk (see the module's docstring)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else cache_root()
        self._verified: set[str] = set()  # checked in this process (and not changed since)
        self._lock = threading.Lock()

    def path(self, digest: str) -> Path:
        return self.root / "recordings" / digest[:2] / f"{digest}.jsonl"

    def valid(self, digest: str) -> Path | None:
        """The cached recording when it is there and matches its hash; a file that does not
        match is removed (it will be fetched again)."""
        path = self.path(digest)
        try:
            st = path.stat()
        except OSError:
            return None
        mark = f"{digest}:{st.st_size}:{st.st_mtime_ns}"
        if mark in self._verified:
            return path
        try:
            ok = file_hash(path) == digest
        except OSError:
            return None
        if not ok:
            _log.warning("%s: does not match its hash: fetched again", path)
            path.unlink(missing_ok=True)
            return None
        with self._lock:
            self._verified.add(mark)
        return path

    def put(self, digest: str, data: bytes) -> Path:
        if content_hash(data) != digest:
            raise ValueError(f"recording {digest[:12]}: the store's bytes do not match its hash")
        path = self.path(digest)
        write_whole(path, data)
        return path

    def tape_dir(self, url: str) -> Path:
        return self.root / "tapes" / hashlib.sha256(url.encode()).hexdigest()[:24]


@dataclass(slots=True)
class Listing:
    """A tape's entries (in the tape's order) and where they came from."""

    refs: list[EntryRef]
    offline: bool = False  # the store could not be reached: the cache's last listing
    modified: dict[str, datetime] = field(default_factory=dict)  # entry path -> written at


class StoreTape:
    """One tape in an object store (see the module's docstring)."""

    def __init__(self, url: str, cache: BlobCache | None = None) -> None:
        self.url = url.rstrip("/")
        self.store, self.prefix = _open(self.url)
        self.scheme = self.url.partition("://")[0].lower()
        self.cache = cache or BlobCache()
        self.parallel = PARALLEL

    # -- keys --------------------------------------------------------------------------------
    def key(self, relative: str) -> str:
        return f"{self.prefix}/{relative}" if self.prefix else relative

    def relative(self, key: str) -> str:
        return key[len(self.prefix) + 1 :] if self.prefix else key

    def fail(self, exc: BaseException, what: str = "") -> StoreError:
        """One line for ``exc``; ``exc`` lets go of its traceback (see :func:`run_sync`)."""
        exc.__traceback__ = None
        exc.__context__ = None
        _release()
        return StoreError(self.url, f"{what}{describe_error(exc, self.scheme)}")

    # -- listing -----------------------------------------------------------------------------
    async def list_folder(self, prefix: str) -> list[dict[str, Any]]:
        """Every object under the folder ``prefix`` (obstore lists by whole path segments)."""
        import obstore

        out: list[Any] = []
        stream = obstore.list(self.store, prefix=self.key(prefix), chunk_size=1000)
        async for batch in stream:
            out.extend(batch)
        return out

    async def _list_range(self, folder: str, start: str, stop: str | None) -> list[dict[str, Any]]:
        """The objects under ``folder`` whose keys are at least ``start`` and below ``stop``
        (a listing that starts after a key, as S3's does, and stops there)."""
        import obstore

        out: list[Any] = []
        low, high = self.key(start), None if stop is None else self.key(stop)
        stream = obstore.list(self.store, prefix=self.key(folder), offset=low, chunk_size=1000)
        async for batch in stream:
            for meta in batch:
                if high is not None and meta["path"] >= high:
                    return out
                if meta["path"] >= low:
                    out.append(meta)
        return out

    async def _list_sharded(self, folder: str, depth: int = 1) -> list[dict[str, Any]]:
        """Everything under ``folder``. One listing when it holds up to
        :data:`SEQUENTIAL_LISTING` objects (a local folder, whose listing is in no order,
        always); else one listing per
        sub-folder (``depth`` 2: the 256 folders ``00``..``ff`` of the index; 1: the 16 hex
        digits a recording's name starts with), :attr:`parallel` at a time."""
        import obstore

        stream = obstore.list(self.store, prefix=self.key(folder), chunk_size=1000)
        first: list[Any] = []
        async for batch in stream:
            first.extend(batch)
            if len(first) >= SEQUENTIAL_LISTING:
                break
        else:
            return first  # the whole folder, in a few pages
        if self.scheme == "file":
            async for batch in stream:
                first.extend(batch)
            return first
        gate = asyncio.Semaphore(self.parallel)

        async def part(prefix: str, stop: str | None) -> list[dict[str, Any]]:
            async with gate:
                if depth == 2:
                    return await self.list_folder(prefix)
                return await self._list_range(folder, prefix, stop)

        if depth == 2:
            names = [f"{folder}/{a}{b}" for a in SHARDS for b in SHARDS]
            parts = await asyncio.gather(*(part(n, None) for n in names))
        else:
            bounds = [*SHARDS, None]
            parts = await asyncio.gather(
                *(
                    part(f"{folder}/{bounds[i]}", _next(folder, bounds[i + 1]))
                    for i in range(len(SHARDS))
                )
            )
        return [meta for p in parts for meta in p]

    def listing(self, *, offline_ok: bool = True) -> Listing:
        """Every entry of the tape, in order (one listing per hex digit, at once). When the
        store cannot be reached and the cache holds an earlier listing, that one (``offline``)."""
        try:
            metas = run_sync(self._list_sharded("index", depth=2))
            if len(metas) >= SEQUENTIAL_LISTING:
                _release()  # the listing left its first stream unread to the end
        except Exception as exc:
            if offline_ok and _unreachable(exc):
                cached = self._cached_listing()
                if cached is not None:
                    why = describe_error(exc, self.scheme)
                    _log.warning("%s: %s: using the last listing cached", self.url, why)
                    return cached
            raise self.fail(exc) from None
        refs: list[EntryRef] = []
        modified: dict[str, datetime] = {}
        for meta in metas:
            ref = parse_entry_key(self.relative(meta["path"]))
            if ref is not None:
                refs.append(ref)
                modified[ref.path] = meta["last_modified"]
        refs.sort()
        listing = Listing(refs, modified=modified)
        self._save_listing(listing)
        return listing

    def entries_for(self, key: str) -> list[EntryRef]:
        """The entries of one match key, in order (one listing: a miss looks here before it
        records, for what another writer added since the tape was opened)."""
        try:
            metas = run_sync(self.list_folder(f"index/{key[:2]}/{key}/"))
        except Exception as exc:
            raise self.fail(exc) from None
        return sorted(r for m in metas if (r := parse_entry_key(self.relative(m["path"]))))

    def _listing_file(self) -> Path:
        return self.cache.tape_dir(self.url) / "listing.json"

    def _save_listing(self, listing: Listing) -> None:
        data = json.dumps({"url": self.url, "entries": [r.path for r in listing.refs]}).encode()
        try:
            write_whole(self._listing_file(), data)
        except OSError as exc:
            _log.warning("%s: cannot cache the listing: %s", self.url, os_error_text(exc))

    def _cached_listing(self) -> Listing | None:
        try:
            obj = json.loads(self._listing_file().read_bytes())
        except (OSError, ValueError):
            return None
        refs = [r for p in obj.get("entries", []) if (r := parse_entry_key(p)) is not None]
        return Listing(sorted(refs), offline=True)

    # -- reading -----------------------------------------------------------------------------
    async def get_async(self, relative: str) -> bytes:
        import obstore

        got = await obstore.get_async(self.store, self.key(relative))
        return bytes(await got.bytes_async())

    def get_bytes(self, relative: str) -> bytes | None:
        """An object's bytes (``None``: there is none)."""
        import obstore

        try:
            return bytes(obstore.get(self.store, self.key(relative)).bytes())
        except FileNotFoundError as exc:
            if "NoSuchBucket" in str(exc):
                raise self.fail(exc) from None
            return None
        except Exception as exc:
            raise self.fail(exc) from None

    def check(self) -> None:
        """Reach the store once (a listing of the tape's top level): a missing bucket,
        refused credentials or a store out of reach is a :class:`StoreError` now, before a
        writer records anything."""
        import obstore

        try:
            obstore.list_with_delimiter(self.store, prefix=self.prefix or None)
        except Exception as exc:
            raise self.fail(exc) from None

    def settings(self) -> Expiry:
        """The tape's ``tape.json`` (max_age, on_expiry); the defaults when it has none."""
        data = self.get_bytes(SETTINGS)
        if data is None:
            return Expiry()
        try:
            return Expiry.from_settings(json.loads(data), f"{self.url}/{SETTINGS}")
        except ValueError as exc:
            raise StoreError(f"{self.url}/{SETTINGS}", str(exc).split(": ", 1)[-1]) from None

    def fetch(
        self,
        digests: Iterable[str],
        progress: Callable[[int], None] | None = None,
    ) -> dict[str, Path]:
        """The cached, verified recordings of ``digests``; the ones not cached (or cached and
        damaged) fetched at once, :attr:`parallel` at a time. A recording the store does not
        hold, or whose bytes do not match their hash, is a :class:`StoreError`; nothing of a
        failed fetch is left in the cache."""
        wanted = list(dict.fromkeys(digests))
        out: dict[str, Path] = {}
        missing: list[str] = []
        for d in wanted:
            path = self.cache.valid(d)
            if path is None:
                missing.append(d)
            else:
                out[d] = path
        if progress is not None and out:
            progress(len(out))
        if missing:
            out.update(run_sync(self._fetch_all(missing, progress)))
        return out

    async def _fetch_all(
        self, digests: list[str], progress: Callable[[int], None] | None
    ) -> dict[str, Path]:
        gate = asyncio.Semaphore(self.parallel)
        failed = asyncio.Event()

        async def one(digest: str) -> tuple[str, Path]:
            async with gate:
                if failed.is_set():  # another fetch failed: none more begins
                    raise _NotStarted
                try:
                    data = await self.get_async(recording_key(digest))
                except FileNotFoundError:
                    raise StoreError(
                        self.url, f"recording {digest[:12]} is named by the index but missing"
                    ) from None
                except StoreError:
                    raise
                except Exception as exc:
                    raise self.fail(exc) from None
            try:
                # a small file, written at once: cheaper in the loop than handed to a thread
                path = self.cache.put(digest, data)
            except ValueError as exc:
                raise StoreError(self.url, str(exc)) from None
            except OSError as exc:
                raise StoreError(str(self.cache.root), os_error_text(exc)) from None
            if progress is not None:
                progress(1)
            return digest, path

        async def guarded(digest: str) -> tuple[str, Path]:
            try:
                return await one(digest)
            except BaseException:
                failed.set()
                raise

        # a failure stops what has not begun and lets the fetches under way end (each soon,
        # the store gone or not): a fetch cancelled in the middle leaves obstore's runtime
        # working for a loop that is gone, which aborts the process at its exit
        results = await asyncio.gather(*(guarded(d) for d in digests), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        first = next((e for e in errors if not isinstance(e, _NotStarted)), None)
        if first is not None:
            raise first
        return dict(r for r in results if not isinstance(r, BaseException))

    def entry_records(
        self, refs: Sequence[EntryRef], progress: Callable[[int], None] | None = None
    ) -> list[EntryRecord]:
        """The entry objects of ``refs`` (fetched at once, kept in the cache: an entry never
        changes)."""

        async def run() -> list[EntryRecord]:
            gate = asyncio.Semaphore(self.parallel)

            async def one(ref: EntryRef) -> EntryRecord:
                cached = self.cache.root / "entries" / ref.path
                try:
                    data = cached.read_bytes()
                except OSError:
                    async with gate:
                        try:
                            data = await self.get_async(ref.path)
                        except Exception as exc:
                            raise self.fail(exc, f"{ref.path}: ") from None
                    with suppress(OSError):
                        write_whole(cached, data)
                if progress is not None:
                    progress(1)
                try:
                    return EntryRecord.from_bytes(data, f"{self.url}/{ref.path}")
                except ValueError as exc:
                    cached.unlink(missing_ok=True)
                    raise StoreError(self.url, str(exc).split(": ", 1)[-1]) from None

            return list(await asyncio.gather(*(one(r) for r in refs)))

        return run_sync(run())

    def goldens(self, digests: set[str]) -> dict[str, bytes]:
        """The golden files the store holds for the recordings ``digests`` (fetched at
        once)."""
        try:
            metas = run_sync(self.list_folder("golden"))
        except Exception as exc:
            raise self.fail(exc) from None
        wanted = []
        for meta in metas:
            relative = self.relative(meta["path"])
            digest = relative.rsplit("/", 1)[-1].removesuffix(".golden.json")
            if digest in digests and golden_key(digest) == relative:
                wanted.append(digest)

        async def run() -> dict[str, bytes]:
            gate = asyncio.Semaphore(self.parallel)

            async def one(digest: str) -> tuple[str, bytes]:
                async with gate:
                    try:
                        return digest, await self.get_async(golden_key(digest))
                    except Exception as exc:
                        raise self.fail(exc) from None

            return dict(await asyncio.gather(*(one(d) for d in wanted)))

        return run_sync(run()) if wanted else {}

    def put_golden(self, digest: str, data: bytes) -> None:
        """Set the golden file of a recording (``check --update``: a golden file follows the
        transcript streamtool makes, so it is replaced, not created once)."""
        import obstore

        try:
            obstore.put(self.store, self.key(golden_key(digest)), data)
        except Exception as exc:
            raise self.fail(exc) from None

    # -- writing -----------------------------------------------------------------------------
    def _create(self, relative: str, data: bytes) -> bool:
        """Create the object unless it exists (if-none-match); ``False`` when it did."""
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        try:
            obstore.put(self.store, self.key(relative), data, mode="create", use_multipart=False)
        except (AlreadyExistsError, PreconditionError):
            return False
        except Exception as exc:
            raise self.fail(exc) from None
        return True

    def put_recording(self, data: bytes) -> str:
        """Store a recording under its hash (once: a recording stored already is left as it
        is); returns the hash."""
        digest = content_hash(data)
        self._create(recording_key(digest), data)
        return digest

    def publish_file(self, path: str | os.PathLike[str], fields: dict[str, Any]) -> EntryRef:
        """Publish the recording at ``path`` as an exchange of the tape: its bytes under their
        hash, then its entry under the request's match key (both conditional creates)."""
        from .library import exchange_of, load_recording

        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise RecordingError(str(path), None, os_error_text(exc)) from None
        ex = exchange_of(load_recording(path))
        key = match_key(ex.endpoint, ex.body)
        digest = self.put_recording(data)
        recorded_at = fields.get("recorded_at")
        ref = EntryRef(stamp(recorded_at if isinstance(recorded_at, str) else None), digest, key)
        record = EntryRecord(digest, len(data), key, Path(path).name, dict(fields))
        self._create(ref.path, record.to_bytes())
        golden = Path(path).with_name(Path(path).stem + ".golden.json")
        if golden.is_file():
            self._create(golden_key(digest), golden.read_bytes())
        return ref

    def delete(self, relatives: Sequence[str]) -> None:
        import obstore

        keys = [self.key(r) for r in relatives]
        for i in range(0, len(keys), 1000):
            try:
                obstore.delete(self.store, keys[i : i + 1000])
            except FileNotFoundError:
                pass
            except Exception as exc:
                raise self.fail(exc) from None

    def recordings(self) -> dict[str, datetime]:
        """Every recording object of the tape: hash -> when it was written."""
        try:
            metas = run_sync(self._list_sharded("recordings"))
        except Exception as exc:
            raise self.fail(exc) from None
        out = {}
        for meta in metas:
            digest = parse_recording_key(self.relative(meta["path"]))
            if digest is not None:
                out[digest] = meta["last_modified"]
        return out


def _next(folder: str, digit: str | None) -> str | None:
    return None if digit is None else f"{folder}/{digit}"


class StorePublisher:
    """The :class:`~streamtool.core.recording.tape_index.TapeStorage` of a store tape: each
    exchange a writer adds to its local folder is published to the store as soon as it is
    complete (its recording, then its entry)."""

    def __init__(self, tape: StoreTape, log: Callable[[str], None] | None = None) -> None:
        self.tape = tape
        self.log = log
        self.published: list[EntryRef] = []
        self.failed: list[tuple[str, str]] = []  # (file, why) not published
        self._lock = threading.Lock()

    def publish(self, folder: Path, entry: IndexEntry) -> None:
        """Publish one exchange; a store that fails is told once per exchange (the recording
        stays in ``folder``: ``tape push`` publishes it later)."""
        try:
            ref = self.tape.publish_file(folder / entry.file, entry_fields(entry))
        except RecordingError as exc:
            with self._lock:
                self.failed.append((entry.file, exc.message))
            line = f"{entry.file}: not published to {self.tape.url}: {exc.message}"
            if self.log is not None:
                self.log(line)
            else:
                _log.error("%s", line)
            return
        with self._lock:
            self.published.append(ref)

    def close(self, folder: Path) -> str | None:
        """The writer is done with its local ``folder``: removed when every exchange was
        published; else kept, and the line that says so (and how to publish it)."""
        if not self.failed:
            discard(folder)
            return None
        n = len(self.failed)
        return (
            f"{n} exchange{'s' if n != 1 else ''} not published: kept in {folder}; "
            f"streamtool tape push {folder} {self.tape.url}"
        )


def staging_folder(url: str) -> Path:
    """A new local folder for a writer to a store tape (its recordings before and after
    they are published), under the cache."""
    base = BlobCache().tape_dir(url.rstrip("/"))
    try:
        base.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"writer-{os.getpid()}-", dir=base))
    except OSError as exc:
        raise RecordingError(str(base), None, os_error_text(exc)) from None


def entry_fields(entry: IndexEntry) -> dict[str, Any]:
    return {k: v for k, v in entry.to_record().items() if k not in ("seq", "file")}


# -- a tape folder made from a store tape -------------------------------------------------------
def read_header(path: Path) -> dict[str, Any]:
    """The header record of the recording at ``path`` (``{}`` when it has none)."""
    try:
        with open(path, "rb") as fh:
            line = fh.readline()
        obj = json.loads(line)
    except (OSError, ValueError):
        return {}
    return obj if isinstance(obj, dict) and obj.get("type") == "header" else {}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def header_fields(path: Path, recorded_at: str | None = None) -> dict[str, Any]:
    """What a tape's index says of the recording at ``path``, from its header."""
    from urllib.parse import urlsplit

    head = read_header(path)
    request: dict[str, Any] = _dict(head.get("request"))
    response: dict[str, Any] = _dict(head.get("response"))
    body: dict[str, Any] = _dict(request.get("body"))
    url = request.get("url") if isinstance(request.get("url"), str) else ""
    return {
        "recorded_at": head.get("recorded_at") or recorded_at,
        "api": head.get("api"),
        "provider": head.get("provider"),
        "method": request.get("method", "POST"),
        "path": urlsplit(url).path or None,
        "model": body.get("model") if isinstance(body.get("model"), str) else None,
        "status": response.get("status"),
    }


def _place(source: Path, target: Path) -> None:
    """``target`` holds the bytes of ``source`` (a hard link where it can, else a copy),
    whole: a new name is linked at once (a link is whole from the start), a name that is
    there already replaced through a temporary name, and a copy written under a temporary
    name and renamed."""
    import shutil

    try:
        os.link(source, target)
        return
    except FileExistsError:  # an earlier pull's: the same recording's link stays as it is
        with suppress(OSError):
            if os.path.samefile(source, target):
                return
    except OSError:  # no link across file systems: a copy
        pass
    temp = target.with_name(f".{target.name}.part")
    temp.unlink(missing_ok=True)
    try:
        os.link(source, temp)
    except OSError:
        shutil.copyfile(source, temp)
    os.replace(temp, target)
    temp.unlink(missing_ok=True)  # a rename onto a link of the same file leaves both names


def write_folder(
    folder: Path,
    refs: Sequence[EntryRef],
    paths: dict[str, Path],
    names: dict[EntryRef, str] | None = None,
    goldens: dict[str, bytes] | None = None,
) -> list[IndexEntry]:
    """Make ``folder`` the tape of ``refs`` (in their order): each recording as
    ``NNNN-name.jsonl`` and the index naming them, written last (a folder a failure left
    midway has no index naming a file it lacks)."""
    folder.mkdir(parents=True, exist_ok=True)
    entries: list[IndexEntry] = []
    for seq, ref in enumerate(refs, start=1):
        source = paths[ref.recording]
        name = view_name(seq, (names or {}).get(ref) or f"{ref.recording[:12]}.jsonl")
        fields = header_fields(source, ref.recorded_at.strftime("%Y-%m-%dT%H:%M:%SZ"))
        if (names or {}).get(ref) is None:
            model = fields.get("model")
            name = view_name(seq, f"{fields.get('provider') or 'api'}-{model or 'model'}.jsonl")
        target = folder / name
        _place(source, target)
        golden = (goldens or {}).get(ref.recording)
        if golden is not None:
            write_whole(target.with_name(target.stem + ".golden.json"), golden)
        entries.append(IndexEntry(seq=seq, file=name, **fields))
    rewrite_index(folder, entries)
    return entries


@dataclass(slots=True)
class Checkout:
    """A store tape as a local tape folder: the folder, the store, what was left out."""

    folder: Path
    tape: StoreTape
    listing: Listing
    expiry: Expiry
    files: dict[str, EntryRef] = field(default_factory=dict)  # file name -> its entry


def checkout(
    url: str,
    folder: str | os.PathLike[str] | None = None,
    *,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    with_goldens: bool = False,
) -> Checkout:
    """The store tape ``url`` as a tape folder (a new private folder under the cache unless
    ``folder`` is given): its recordings fetched (those not cached) and linked in, its index
    written (``with_goldens``: the golden files beside them). Offline, the last listing
    cached and the recordings cached serve."""
    tape = StoreTape(url)
    listing = tape.listing()
    if on_total is not None:
        on_total(len(listing.refs))
    try:
        paths = tape.fetch([r.recording for r in listing.refs], progress)
    except StoreError as exc:
        if not listing.offline:
            raise
        raise StoreError(
            url, "the store cannot be reached and not every recording is cached"
        ) from exc
    if folder is None:
        base = tape.cache.tape_dir(tape.url)
        base.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="view-", dir=base))
    target = Path(folder)
    goldens: dict[str, bytes] = {}
    if with_goldens:
        goldens = tape.goldens({r.recording for r in listing.refs})
    entries = write_folder(target, listing.refs, paths, goldens=goldens)
    files = {e.file: ref for e, ref in zip(entries, listing.refs, strict=True)}
    expiry = Expiry() if listing.offline else tape.settings()
    return Checkout(target, tape, listing, expiry, files)


def publish_goldens(co: Checkout) -> int:
    """Send the golden files of a checked-out tape that differ from the store's (after
    ``check --update``); how many were sent."""
    held = co.tape.goldens({ref.recording for ref in co.files.values()})
    sent = 0
    for name, ref in co.files.items():
        path = co.folder / (Path(name).stem + ".golden.json")
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if held.get(ref.recording) != data:
            co.tape.put_golden(ref.recording, data)
            sent += 1
    return sent


def discard(folder: str | os.PathLike[str]) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def now() -> datetime:
    return datetime.now(UTC)


def local_tape_settings(folder: str | os.PathLike[str]) -> Expiry:
    """A tape folder's ``tape.json`` (max_age, on_expiry); the defaults when it has none."""
    path = Path(folder) / SETTINGS
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Expiry()
    except OSError as exc:
        raise RecordingError(str(path), None, os_error_text(exc)) from None
    try:
        return Expiry.from_settings(json.loads(data), str(path))
    except ValueError as exc:
        raise RecordingError(str(path), None, str(exc).split(": ", 1)[-1]) from None


__all__ = [
    "BlobCache",
    "Checkout",
    "StoreError",
    "StorePublisher",
    "StoreTape",
    "checkout",
    "is_store_url",
]
