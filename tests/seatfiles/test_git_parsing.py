"""git's machine output into rows, and patches into bounded hunks: pure, table-tested."""

from __future__ import annotations

import msgspec

from forge.wire.git import (
    DIFF_BYTES_MAX,
    DIFF_FILES_MAX,
    FILE_BYTES_MAX,
    FILE_LINES_MAX,
    Clean,
    FileStat,
    Populated,
    Work,
)
from forge.workers.trees.gitdiff import DiffReader, header_paths, unquote, untracked_file
from forge.workers.trees.gitparse import ahead, parse_changes, parse_status, pick_base
from forge.workers.trees.watch import relevant


def test_status_gives_the_work_row_and_each_entrys_change() -> None:
    output = "\0".join(
        [
            "# branch.oid abc",
            "# branch.head main",
            "1 .M N... 100644 100644 100644 a b tracked.txt",
            "1 A. N... 000000 100644 100644 a b new.txt",
            "1 .D N... 100644 100644 000000 a b gone.txt",
            "2 R. N... 100644 100644 100644 a b R100 new name.txt",
            "old name.txt",
            "u UU N... 100644 100644 100644 100644 a b c both.txt",
            "? untracked.txt",
            "",
        ]
    )
    read = parse_status(output)
    assert read.work == Work(branch="main", changed=6, gate=True)
    assert read.born
    assert [(e.path, e.old_path, e.status) for e in read.entries] == [
        ("tracked.txt", None, "modified"),
        ("new.txt", None, "added"),
        ("gone.txt", None, "deleted"),
        ("new name.txt", "old name.txt", "renamed"),
        ("both.txt", None, "unmerged"),
        ("untracked.txt", None, "untracked"),
    ]
    unborn = parse_status("# branch.oid (initial)\0# branch.head (detached)\0")
    assert (unborn.work.branch, unborn.born) == (None, False)


def test_raw_and_numstat_records_join_into_classified_counts() -> None:
    output = (
        ":100644 100644 a b M\0kept.txt\0:000000 100644 a b A\0bin.dat\0"
        ":100644 100644 a b R075\0old.txt\0new.txt\0"
        "3\t1\tkept.txt\0-\t-\tbin.dat\0"
        "1\t0\t\0old.txt\0new.txt\0"
    )
    assert parse_changes(output) == [
        FileStat(path="kept.txt", status="modified", added=3, removed=1),
        FileStat(path="bin.dat", status="added", added=None, removed=None),
        FileStat(path="new.txt", old_path="old.txt", status="renamed", added=1, removed=0),
    ]


def test_the_ahead_chain_counts_everything_and_walks_a_bounded_log() -> None:
    log = (
        "\x1eabc1234\x1f1700000000\x1fsecond: fix\0\n:100644 100644 a b M\0a.txt\0"
        "2\t2\ta.txt\0\x1edef5678\x1f1690000000\x1ffirst\0\n:000000 100644 a b A\0b.txt\0"
        "5\t0\tb.txt\0"
    )
    range_stat = "\x00".join(
        [
            ":000000 100644 a b A",
            "b.txt",
            ":100644 100644 a b M",
            "a.txt",
            "5\t0\tb.txt",
            "2\t2\ta.txt",
            "",
        ]
    )
    measured = ahead("1\t7\n", log, range_stat, walked=1)
    assert measured is not None
    assert (measured.commit_count, measured.behind, measured.truncated) == (7, 1, True)
    [commit] = measured.commits
    assert (commit.sha, commit.subject, commit.committed_at) == (
        "abc1234",
        "second: fix",
        1700000000,
    )
    assert commit.stats.busiest == [FileStat(path="a.txt", status="modified", added=2, removed=2)]
    assert (measured.stats.files, measured.stats.added, measured.stats.removed) == (2, 7, 2)
    assert [row.path for row in measured.stats.busiest] == ["b.txt", "a.txt"]
    assert ahead("0\t0\n", "", "") is None


def test_paths_are_unquoted_as_git_quotes_them() -> None:
    assert unquote('"a\\tb\\"c\\\\d"') == 'a\tb"c\\d'
    assert unquote('"caf\\303\\251"') == "café"
    assert unquote("plain name") == "plain name"
    assert header_paths("a/x y b/x y") == ("x y", "x y")
    assert header_paths('"a/t\\tb" "b/t\\tb"') == ("t\tb", "t\tb")
    assert header_paths("a/old b/new") is None


def patch(path: str, lines: list[str], start: int = 1) -> list[bytes]:
    head = [
        f"diff --git a/{path} b/{path}",
        "index 1..2 100644",
        f"--- a/{path}",
        f"+++ b/{path}",
        f"@@ -{start},{len(lines)} +{start},{len(lines)} @@ def f():",
    ]
    return [line.encode() for line in [*head, *lines]]


def test_a_hunk_carries_kinds_and_both_line_numbers() -> None:
    reader = DiffReader()
    for line in patch(
        "f.py", [" keep", "-old", "+new", "+more", "\\ No newline at end of file"], 10
    ):
        assert reader.feed(line)
    layer = reader.layer()
    assert isinstance(layer, Populated)
    [file] = layer.files
    assert (file.path, file.old_path, file.status, file.truncated) == (
        "f.py",
        None,
        "modified",
        False,
    )
    [hunk] = file.hunks
    assert hunk.section == "def f():"
    assert [(line.kind, line.text, line.old, line.new) for line in hunk.lines] == [
        ("context", "keep", 10, 10),
        ("removed", "old", 11, None),
        ("added", "new", None, 11),
        ("added", "more", None, 12),
    ]
    assert DiffReader().layer() == Clean()


def test_renames_binaries_and_submodules_are_flagged() -> None:
    reader = DiffReader()
    for text in [
        "diff --git a/old name.txt b/new name.txt",
        "similarity index 90%",
        "rename from old name.txt",
        "rename to new name.txt",
        "diff --git a/img.png b/img.png",
        "new file mode 100644",
        "Binary files /dev/null and b/img.png differ",
        "diff --git a/sub b/sub",
        "index abc..def 160000",
        "--- a/sub",
        "+++ b/sub",
        "@@ -1 +1 @@",
        "-Subproject commit abc",
        "+Subproject commit def",
    ]:
        reader.feed(text.encode())
    layer = reader.layer()
    assert isinstance(layer, Populated)
    renamed, image, sub = layer.files
    assert (renamed.path, renamed.old_path, renamed.status) == (
        "new name.txt",
        "old name.txt",
        "renamed",
    )
    assert (image.status, image.binary, image.hunks) == ("added", True, [])
    assert sub.submodule


def test_a_file_is_cut_at_400_lines_or_32_kib() -> None:
    reader = DiffReader()
    for line in patch("many", [f"+{n}" for n in range(FILE_LINES_MAX + 50)]):
        reader.feed(line)
    for line in patch("wide", ["+" + "x" * 1000 for _ in range(40)]):
        reader.feed(line)
    layer = reader.layer()
    assert isinstance(layer, Populated)
    many, wide = layer.files
    assert many.truncated
    assert len(many.hunks[0].lines) == FILE_LINES_MAX
    assert wide.truncated
    assert sum(len(line.text) for line in wide.hunks[0].lines) == (FILE_BYTES_MAX // 1000) * 1000
    assert layer.capped.files is layer.capped.bytes is False


def test_a_diff_is_capped_at_100_files_and_says_how_many_there_were() -> None:
    reader = DiffReader()
    fed = 0
    for n in range(DIFF_FILES_MAX + 20):
        for line in patch(f"f{n}", ["+x"]):
            fed += 1
            if not reader.feed(line):
                break
        if reader.full:
            break
    layer = reader.layer(files_total=5000)
    assert isinstance(layer, Populated)
    assert len(layer.files) == DIFF_FILES_MAX
    assert (layer.capped.files, layer.capped.bytes, layer.files_total) == (True, False, 5000)


def test_a_diff_is_capped_at_512_kib_of_carried_text() -> None:
    reader = DiffReader()
    wide = ["+" + "y" * 1000 for _ in range(30)]
    n = 0
    while not reader.full:
        for line in patch(f"f{n}", wide):
            reader.feed(line)
        n += 1
    layer = reader.layer()
    assert isinstance(layer, Populated)
    carried = sum(len(line.text) for f in layer.files for h in f.hunks for line in h.lines)
    assert carried <= DIFF_BYTES_MAX
    assert layer.capped.bytes
    assert layer.files[-1].truncated
    assert len(msgspec.json.encode(layer)) < DIFF_BYTES_MAX + 200 * 1024


def test_an_untracked_file_is_one_added_hunk_or_a_binary() -> None:
    file, size = untracked_file("new.txt", b"a\nb\n", whole=True)
    assert [(line.kind, line.text, line.new) for line in file.hunks[0].lines] == [
        ("added", "a", 1),
        ("added", "b", 2),
    ]
    assert (file.status, file.truncated, size) == ("untracked", False, 2)
    cut, _ = untracked_file("big.txt", b"a\nb\npart", whole=False)
    assert [line.text for line in cut.hunks[0].lines] == ["a", "b"]
    assert cut.truncated
    binary, _ = untracked_file("x.bin", b"\0\1", whole=True)
    assert (binary.binary, binary.hunks) == (True, [])


def test_the_base_is_the_upstream_else_origin_head_else_a_local_main() -> None:
    def refs(*lines: tuple[str, str, str, str]) -> str:
        return "".join("\0".join(line) + "\n" for line in lines)

    feat = ("*", "refs/heads/feat", "", "")
    main = (" ", "refs/heads/main", "", "")
    origin = (" ", "refs/remotes/origin/HEAD", "", "refs/remotes/origin/trunk")
    tracked = ("*", "refs/heads/feat", "refs/remotes/origin/feat", "")
    assert pick_base(refs(tracked, main, origin)) == "refs/remotes/origin/feat"
    assert pick_base(refs(feat, main, origin)) == "refs/remotes/origin/trunk"
    assert pick_base(refs(feat, main)) == "refs/heads/main"
    assert pick_base(refs(("*", "refs/heads/main", "", ""))) is None
    assert pick_base(refs(main)) is None  # detached: no branch to measure


def test_inside_a_git_folder_only_what_moves_a_row_wakes_the_watch() -> None:
    folders = ["/r/.git/"]
    for path in ("/r/a.txt", "/r/src/.gitignore", "/r/.git/HEAD", "/r/.git/index"):
        assert relevant(path, folders), path
    for path in ("/r/.git/refs/heads/main", "/r/.git/packed-refs", "/r/.git/MERGE_HEAD"):
        assert relevant(path, folders), path
    for path in ("/r/.git/objects/ab/cdef", "/r/.git/index.lock", "/r/.git/logs/HEAD"):
        assert not relevant(path, folders), path
    assert not relevant("/r/.git/refs/heads/main.lock", folders)
