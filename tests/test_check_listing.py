"""What ``check`` finds in folders: the same files, in the same order, with the same names and the
same duplicates dropped as :func:`os.walk` and :mod:`pathlib` give (the search lists each folder
once with :func:`os.scandir` and makes no Path object per file)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamtool.core.drive.check import INDEX_NAME, _find_targets
from streamtool.core.outputs.golden import golden_name, is_golden_name, recording_stem
from streamtool.core.recording import tape_index

SCAN_SUFFIXES = (".jsonl", ".sse")
RECORDING_SUFFIXES = (".jsonl", ".sse", ".txt", ".json")


# -- the reference: the search as os.walk and pathlib do it, file by file ----------------------
def reference(paths: list[str]) -> tuple[list[tuple[str | None, str]], list[str]]:
    """``(recording, golden)`` pairs and the error messages, found with os.walk, Path objects
    and a Path.is_symlink / Path.resolve per golden file."""
    targets: list[tuple[str | None, str]] = []
    errors: list[str] = []
    seen: set[Path] = set()

    def beside(golden: Path) -> Path | None:
        stem = recording_stem(golden.name)
        for suffix in RECORDING_SUFFIXES:
            candidate = golden.with_name(stem + suffix)
            if candidate.is_file() and not is_golden_name(candidate.name):
                return candidate
        return None

    def add(recording: Path | None, golden: Path) -> None:
        key = golden.resolve() if golden.is_symlink() else golden.parent.resolve() / golden.name
        if key not in seen:
            seen.add(key)
            targets.append((None if recording is None else str(recording), str(golden)))

    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found: list[tuple[Path | None, Path]] = []
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                here = Path(dirpath)
                goldens = {n for n in filenames if is_golden_name(n)}
                claimed: dict[str, str] = {}
                for name in sorted(filenames):
                    if name in goldens or name == INDEX_NAME or not name.endswith(SCAN_SUFFIXES):
                        continue
                    gname = golden_name(name)
                    if gname in claimed:
                        errors.append(f"{here / name}: its golden file name {gname} is taken")
                        continue
                    claimed[gname] = name
                    found.append((here / name, here / gname))
                for gname in sorted(goldens - claimed.keys()):
                    found.append((beside(here / gname), here / gname))
            if not found:
                errors.append(f"{path}: no recordings")
            for recording, golden in found:
                add(recording, golden)
        elif path.is_file():
            if is_golden_name(path.name):
                add(beside(path), path)
            else:
                add(path, path.with_name(golden_name(path.name)))
        else:
            errors.append(f"{path}: no such file or folder")
    return targets, errors


def found(paths: list[str]) -> tuple[list[tuple[str | None, str]], list[str]]:
    errors: list = []
    targets = _find_targets(paths, errors)
    messages = []
    for e in errors:
        text = e.message
        if "is taken by" in text:
            text = text.split(" by ")[0]
        elif "no recordings" in text:
            text = text.split(" (")[0]
        messages.append(text)
    return targets, messages


@contextlib.contextmanager
def cwd(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def test_the_index_name_is_the_tapes() -> None:
    assert INDEX_NAME == tape_index.INDEX_NAME


def tricky_tree(root: Path) -> None:
    """Nested folders, a hidden one, links to a folder and to golden files, orphans whose
    recording is a .txt or gone, two recordings for one golden file, a tape index."""
    suite = root / "suite"
    for folder in ("", "b", "a", "a/deep", ".hidden", "a/.git"):
        (suite / folder).mkdir(parents=True, exist_ok=True)
        for name in ("x.jsonl", "x.golden.json", "y.sse", "z.jsonl", "z.golden.json"):
            (suite / folder / name).write_text("{}\n", encoding="utf-8")
    (suite / "a" / "x.sse").write_text("", encoding="utf-8")  # x.golden.json is taken
    (suite / "a" / "notes.txt").write_text("", encoding="utf-8")
    (suite / "a" / "notes.golden.json").write_text("{}", encoding="utf-8")  # recording: .txt
    (suite / "b" / "gone.golden.json").write_text("{}", encoding="utf-8")  # an orphan
    (suite / "b" / INDEX_NAME).write_text("{}\n", encoding="utf-8")
    (suite / "b" / "data.json").write_text("{}", encoding="utf-8")  # not searched for
    (suite / "link-to-a").symlink_to(suite / "a")  # a link to a folder: not followed
    (suite / "b" / "w.jsonl").write_text("{}\n", encoding="utf-8")
    (suite / "b" / "w.golden.json").symlink_to(suite / "z.golden.json")  # the same golden file
    (suite / "b" / "dangling.golden.json").symlink_to(suite / "nowhere.golden.json")
    (root / "alone.jsonl").write_text("{}\n", encoding="utf-8")


def test_the_search_finds_what_os_walk_and_pathlib_find(tmp_path: Path) -> None:
    tricky_tree(tmp_path)
    suite = tmp_path / "suite"
    with cwd(tmp_path):
        for paths in (
            [str(suite)],
            [f"{suite}/"],
            ["suite"],
            ["./suite/"],
            ["suite", "suite/a", "suite/link-to-a", "suite/b/w.golden.json", "alone.jsonl"],
            ["suite/a/x.golden.json", "suite/a/deep/x.jsonl", "suite/z.golden.json", "suite"],
        ):
            assert found(paths) == reference(paths), paths
    with cwd(suite):
        for paths in (["."], ["./"], [".", "a"], ["a/deep", "."], ["x.jsonl", "."]):
            assert found(paths) == reference(paths), paths
        targets, _ = found(["."])
        assert ("x.jsonl", "x.golden.json") in targets  # not ./x.jsonl, as pathlib writes it
        assert ("a/deep/x.jsonl", "a/deep/x.golden.json") in targets


NAMES = st.sampled_from(
    [
        "a.jsonl",
        "a.golden.json",
        "a.sse",
        "a.txt",
        "b.sse",
        "b.golden.json",
        "c.golden.json",
        "c.json",
        "index.jsonl",
        "index.golden.json",
        "d.e.jsonl",
        "d.e.golden.json",
        ".f.jsonl",
        "g.md",
    ]
)
FOLDERS = st.sampled_from(["", "p", "q", "p/r", ".s", "p/.t", "q/u"])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.lists(st.tuples(FOLDERS, NAMES), max_size=30),
    links=st.lists(st.tuples(FOLDERS, NAMES, FOLDERS, NAMES), max_size=4),
    folder_links=st.lists(st.tuples(FOLDERS, FOLDERS), max_size=2),
    start=st.sampled_from(["", "p", "q"]),
)
def test_any_tree_is_searched_as_os_walk_and_pathlib_search_it(
    files: list[tuple[str, str]],
    links: list[tuple[str, str, str, str]],
    folder_links: list[tuple[str, str]],
    start: str,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for folder in ("p/r", ".s", "p/.t", "q/u"):
            (root / folder).mkdir(parents=True, exist_ok=True)
        for folder, name in files:
            (root / folder / name).write_text("", encoding="utf-8")
        for i, (folder, name, target_folder, target_name) in enumerate(links):
            link = root / folder / f"l{i}-{name}"
            link.symlink_to(root / target_folder / target_name)  # maybe dangling
        for i, (folder, target) in enumerate(folder_links):
            (root / folder / f"linked{i}").symlink_to(root / target, target_is_directory=True)
        with cwd(root):
            for paths in (
                [start or "."],
                [str(root / start)],
                [start or ".", "q", "p/r"],
                [*(f"{f}/{n}".lstrip("/") for f, n in files[:3]), "."],
            ):
                assert found(paths) == reference(paths), paths


def test_a_folder_that_cannot_be_listed_is_left_out_as_os_walk_leaves_it(tmp_path: Path) -> None:
    if os.geteuid() == 0:  # root lists every folder
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "x.jsonl").write_text("", encoding="utf-8")
        assert found([str(tmp_path)]) == reference([str(tmp_path)])
        return
    (tmp_path / "shut").mkdir()
    (tmp_path / "shut" / "x.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "y.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "shut").chmod(0)
    try:
        assert found([str(tmp_path)]) == reference([str(tmp_path)])
        assert [r for r, _ in found([str(tmp_path)])[0]] == [str(tmp_path / "y.jsonl")]
    finally:
        (tmp_path / "shut").chmod(0o755)
