"""Which object-store library tapes on object storage use: obstore against fsspec with s3fs,
measured on the same S3 server (moto on 127.0.0.1 behind a relay that holds every request
30 ms, as a store across a network).

    python benchmarks/bench_store_library.py [--objects 1000] [--size 4096] [--delay 0.03]
        [--rounds 3]

For each library, in interleaved rounds (medians printed):

- ``import``: a fresh interpreter importing the library and making a client for the bucket
  (what every command that opens a store URL pays at start);
- ``get seq``: the objects fetched one after the other;
- ``get par``: the same objects fetched at once (obstore: ``get_async`` under
  ``asyncio.gather``, 64 at a time; s3fs: ``fs.cat`` of the list, its own batching);
- ``put create``: one conditional create (If-None-Match) of an object that exists is refused
  (both libraries document it: obstore ``mode="create"``, s3fs ``_pipe_file(mode="create")``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.store_servers import BUCKET, DelayRelay, moto_s3  # noqa: E402

IMPORT = {
    "obstore": "import obstore; from obstore.store import from_url; "
    f"from_url('s3://{BUCKET}/x', client_options={{'allow_http': True}})",
    "s3fs": "import s3fs; s3fs.S3FileSystem()",
}


def import_time(lib: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", IMPORT[lib]], check=True)
    return time.perf_counter() - t


def obstore_store():  # type: ignore[no-untyped-def]
    from obstore.store import from_url

    return from_url(f"s3://{BUCKET}/lib", client_options={"allow_http": True})


def obstore_seq(keys: list[str]) -> float:
    import obstore

    store = obstore_store()
    t = time.perf_counter()
    for k in keys:
        obstore.get(store, k).bytes()
    return time.perf_counter() - t


def obstore_par(keys: list[str]) -> float:
    import obstore

    store = obstore_store()

    async def run() -> None:
        gate = asyncio.Semaphore(int(os.environ.get("BENCH_CONCURRENCY", "64")))

        async def one(k: str) -> None:
            async with gate:
                got = await obstore.get_async(store, k)
                await got.bytes_async()

        await asyncio.gather(*(one(k) for k in keys))

    t = time.perf_counter()
    asyncio.run(run())
    return time.perf_counter() - t


def s3fs_seq(keys: list[str]) -> float:
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    t = time.perf_counter()
    for k in keys:
        fs.cat_file(f"{BUCKET}/lib/{k}")
    return time.perf_counter() - t


def s3fs_par(keys: list[str]) -> float:
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    t = time.perf_counter()
    fs.cat([f"{BUCKET}/lib/{k}" for k in keys])
    return time.perf_counter() - t


def create_refused() -> dict[str, bool]:
    import obstore
    import s3fs
    from obstore.exceptions import AlreadyExistsError

    out = {}
    store = obstore_store()
    obstore.put(store, "exists", b"1")
    try:
        obstore.put(store, "exists", b"2", mode="create")
        out["obstore"] = False
    except AlreadyExistsError:
        out["obstore"] = True
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    try:
        fs.pipe_file(f"{BUCKET}/lib/exists", b"3", mode="create")
        out["s3fs"] = False
    except FileExistsError:
        out["s3fs"] = True
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=1000)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--delay", type=float, default=0.030)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    keys = [f"obj-{i:05d}" for i in range(args.objects)]
    with moto_s3() as origin:
        import obstore

        store = obstore_store()
        payload = os.urandom(args.size)
        for k in keys:
            obstore.put(store, k, payload)
        with DelayRelay(origin, args.delay) as far:
            os.environ["AWS_ENDPOINT_URL"] = far.url
            runs: dict[str, list[float]] = {}
            seq_keys = keys[: max(1, args.objects // 10)]  # a tenth: the loop is slow
            for _ in range(args.rounds):
                for name, fn, ks in (
                    ("obstore get seq (per object)", obstore_seq, seq_keys),
                    ("s3fs get seq (per object)", s3fs_seq, seq_keys),
                    ("obstore get par", obstore_par, keys),
                    ("s3fs get par", s3fs_par, keys),
                ):
                    took = fn(ks)
                    runs.setdefault(name, []).append(took / (len(ks) if "seq" in name else 1))
                for lib in IMPORT:
                    runs.setdefault(f"{lib} import + client", []).append(import_time(lib))
            refused = create_refused()
    print(f"{args.objects} objects of {args.size} B, {args.delay * 1000:g} ms per request")
    for name, values in runs.items():
        print(f"  {name:<32} {statistics.median(values) * 1000:9.1f} ms (median of {len(values)})")
    for lib, ok in refused.items():
        print(f"  {lib}: conditional create of an existing object refused: {ok}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
