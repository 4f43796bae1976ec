"""Frame signatures and the duplicate audit: exact copies across containers, near copies under
noise and gain, distinct scenes never paired, the index equal to all-pairs, damaged records."""

from __future__ import annotations

import hashlib
import zlib
from collections import OrderedDict
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dvc_cuvis.leakage import index, signatures
from dvc_cuvis.leakage.duplicates import audit, audit_columns
from dvc_cuvis.leakage.index import popcount, query_pairs
from dvc_cuvis.leakage.signatures import (
    SIGNATURE_VERSION,
    DamagedSignatureError,
    Signature,
    columns,
    columns_from_records,
    content_digest,
    crop_step,
    from_record,
    perceptual_hash,
    perceptual_hashes,
    sample_grid,
    signature,
    spectral_shape,
    to_record,
)


def _scene(rng: np.random.Generator, h: int = 48, w: int = 48, c: int = 24) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    img = np.zeros((h, w, c))
    for _ in range(6):
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        s = rng.uniform(4, 14)
        img += np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / (2 * s * s))[..., None] \
            * rng.uniform(0.2, 1, c)
    return img.astype(np.float32)


def test_npz_resaved_with_other_compression_is_an_exact_cross_stage_pair(tmp_path):
    cube = _scene(np.random.default_rng(1))
    np.savez(tmp_path / "a.npz", cube=cube, source=np.array("a"))
    np.savez_compressed(tmp_path / "b.npz", cube=cube, source=np.array("b"))
    md5 = [hashlib.md5((tmp_path / n).read_bytes()).hexdigest() for n in ("a.npz", "b.npz")]
    assert md5[0] != md5[1]  # the containers differ...
    sigs = {}
    for n in ("a", "b"):
        with np.load(tmp_path / f"{n}.npz") as z:
            sigs[n] = signature(z["cube"])
    assert sigs["a"].content == sigs["b"].content  # ...their frame does not
    other = signature(_scene(np.random.default_rng(2)))
    res = audit({"a": "train", "b": "test", "c": "test", "d": "train"},
                {"a": sigs["a"], "b": sigs["b"], "c": other, "d": None})
    assert [(p.kind, p.first, p.second) for p in res.exact] == [("exact", "a", "b")]
    assert res.near == () and res.unsigned == ("d",) and res.within_stage == 0


def test_exact_copies_inside_one_stage_are_counted_not_paired():
    sig = signature(_scene(np.random.default_rng(3)))
    res = audit({"a": "train", "b": "train"}, {"a": sig, "b": sig})
    assert res.exact == () and res.within_stage == 1


def test_content_digest_is_of_data_dtype_and_shape():
    cube = _scene(np.random.default_rng(4))
    assert signature(cube).content == signature(cube.astype(">f4")).content
    assert signature(cube).content != signature(cube.astype(np.float64)).content
    assert signature(cube).content != signature(cube.reshape(24, 96, 24)).content


@pytest.mark.parametrize("gain", [0.95, 1.05])
def test_noisy_gain_changed_copy_is_a_near_pair(gain):
    rng = np.random.default_rng(5)
    cube = _scene(rng)
    copy = cube * gain + rng.normal(0, 0.02 * float(cube.max() - cube.min()), cube.shape)
    res = audit({"a": "train", "b": "val"},
                {"a": signature(cube), "b": signature(copy.astype(np.float32))})
    assert [(p.kind, p.first, p.second) for p in res.near] == [("near", "a", "b")]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_distinct_scenes_do_not_pair(seed):
    rng = np.random.default_rng(seed)
    sigs = {f"s{i}": signature(_scene(rng)) for i in range(4)}
    res = audit({"s0": "train", "s1": "test", "s2": "val", "s3": "test"}, sigs)
    assert res.exact == () and res.near == ()


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 12))
def test_index_finds_exactly_the_cross_group_pairs_all_pairs_would(seed, threshold):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**63, 40, dtype=np.uint64)
    flips = np.array([sum(1 << int(b) for b in rng.choice(64, rng.integers(0, 16), False))
                      for _ in range(40)], dtype=np.uint64)
    central = np.concatenate([base, base ^ flips])
    n = len(central)
    crops = central[rng.permutation(n)] ^ flips[rng.integers(0, 40, n)]  # one crop each
    queries, owner = np.concatenate([central, crops]), np.concatenate([np.arange(n)] * 2)
    groups = rng.integers(0, 3, n)
    pairs, dist = query_pairs(central, queries, owner, groups, threshold)
    got = dict(zip(map(tuple, pairs.tolist()), dist.tolist(), strict=True))
    with mock.patch.object(index, "BATCH", 3):  # expanded a few candidates at a time
        small = query_pairs(central, queries, owner, groups, threshold)
    assert small[0].tolist() == pairs.tolist() and small[1].tolist() == dist.tolist()
    every = popcount((queries[:, None] ^ central[None, :]).ravel()).reshape(2 * n, n)
    least = np.full((n, n), 99)  # [i, c]: the least distance of i's hashes to c's centre
    np.minimum.at(least, owner, every)
    want = {(i, j): int(min(least[i, j], least[j, i])) for i in range(n)
            for j in range(i + 1, n)
            if groups[i] != groups[j] and min(least[i, j], least[j, i]) <= threshold}
    assert got == want


def test_signature_record_round_trips_and_damage_names_the_file():
    sig = signature(_scene(np.random.default_rng(6)))
    assert from_record(to_record(sig), "x") == sig
    assert from_record({**to_record(sig), "v": 99}, "x") is None  # another version: unsigned
    for bad in ([1], {"v": SIGNATURE_VERSION}, {**to_record(sig), "phash": "zz"},
                {**to_record(sig), "shape": [float("nan")]}, {**to_record(sig), "v": "1"}):
        with pytest.raises(DamagedSignatureError, match=r"summaries/%summary.json: damaged"):
            from_record(bad, "summaries/%summary.json")


@pytest.mark.parametrize("seed", [1, 4, 6, 7])  # scenes the former hash missed
def test_a_copy_shifted_by_three_pixels_is_a_near_pair(seed):
    rng = np.random.default_rng(seed)
    big = _scene(rng, 72, 72, 16)  # a copy cut 3 px off in both axes, noisy, gain changed
    base = big[4:68, 4:68]
    dy, dx = (3, -3) if seed % 2 else (-3, 3)
    copy = (big[4 + dy:68 + dy, 4 + dx:68 + dx] * (0.95 if seed % 4 < 2 else 1.05)
            + rng.normal(0, 0.02 * float(base.max() - base.min()), base.shape))
    res = audit({"a": "train", "b": "test"},
                {"a": signature(base), "b": signature(copy.astype(np.float32))})
    assert [(p.kind, p.first, p.second) for p in res.near] == [("near", "a", "b")]


def _planted_signatures(rng: np.random.Generator, n: int) -> tuple[dict[str, str], dict]:
    """n signatures in three stages: random hashes, and near copies of earlier frames (a
    centre or a crop within 0-9 bits, the shape alike or not), exact copies, frames without
    crops."""
    stages = ["train", "val", "test"]
    base = rng.normal(size=(n, 16))
    shapes = base / np.linalg.norm(base, axis=1, keepdims=True)
    centre = rng.integers(0, 2**63, n, dtype=np.uint64)
    crops = rng.integers(0, 2**63, (n, 8), dtype=np.uint64)
    content = [f"{rng.integers(0, 2**62):032x}" for _ in range(n)]
    for k in range(n // 2, n):
        src = int(rng.integers(0, n // 2))
        flips = np.uint64(sum(1 << int(b) for b in rng.choice(64, rng.integers(0, 10), False)))
        picked = int(rng.integers(0, 9))  # copy the source's centre (0) or one of its crops
        centre[k] = (centre[src] if picked == 0 else crops[src, picked - 1]) ^ flips
        if rng.random() < 0.8:
            shapes[k] = shapes[src] + rng.normal(0, 0.01 if rng.random() < 0.7 else 0.2, 16)
            shapes[k] /= np.linalg.norm(shapes[k])
        if rng.random() < 0.1:
            content[k] = content[src]
    sigs = {f"u{k:04d}": Signature(content[k], int(centre[k]),
                                   tuple(round(float(v), 6) for v in shapes[k]),
                                   () if k % 7 == 0 else tuple(int(h) for h in crops[k]))
            for k in range(n)}
    return {u: stages[int(rng.integers(0, 3))] for u in sigs}, sigs


def _all_pairs(stage_of: dict[str, str], sigs: dict, hamming: int, cosine: float
               ) -> tuple[list[tuple], list[tuple]]:
    """The audit by brute force: every cross-stage pair compared on every hash."""
    uids = sorted(sigs)
    centre = np.array([sigs[u].phash for u in uids], dtype=np.uint64)
    hashes = np.array([(sigs[u].phash, *(sigs[u].crops or (sigs[u].phash,) * 8)) for u in uids],
                      dtype=np.uint64)
    to_centre = popcount(hashes[:, :, None] ^ centre[None, None, :]).min(axis=1)  # [i, j]
    dist = np.minimum(to_centre, to_centre.T)
    shapes = np.array([sigs[u].shape for u in uids])
    cos = shapes @ shapes.T
    exact, near = [], []
    for i, j in zip(*np.triu_indices(len(uids), 1), strict=True):
        a, b = uids[i], uids[j]
        if stage_of[a] == stage_of[b]:
            continue
        if sigs[a].content == sigs[b].content:
            exact.append((a, b))
        elif dist[i, j] <= hamming and cos[i, j] >= cosine:
            near.append((a, b, int(dist[i, j])))
    return exact, near


@pytest.mark.parametrize(("seed", "hamming"), [(1, 5), (2, 8), (3, 2)])
def test_the_audit_from_columns_equals_all_pairs_compared(seed, hamming):
    # the index's two bucket lookups (a table of every key for the denser chunks of
    # hamming 8, binary searches for the sparse 21-22-bit ones), radius 0 (hamming 2) and 1
    stage_of, sigs = _planted_signatures(np.random.default_rng(seed), 300)
    exact, near = _all_pairs(stage_of, sigs, hamming, 0.995)
    assert len(near) > 10 and exact  # the reference holds pairs of both kinds
    res = audit(stage_of, sigs, hamming=hamming)
    assert [(p.first, p.second) for p in res.exact] == exact
    assert [(p.first, p.second, p.distance) for p in res.near] == near
    records = [to_record(sigs[u]) for u in sorted(sigs)]
    signed, cols = columns_from_records(records, ["shard"] * len(records))
    assert signed.all()
    uids = sorted(sigs)
    again = audit_columns(uids, [stage_of[u] for u in uids], cols, hamming=hamming)
    assert again == res


def test_signatures_read_as_columns_are_what_each_record_reads():
    rng = np.random.default_rng(8)
    sigs = [signature(_scene(rng)) for _ in range(3)]
    short = {**to_record(sigs[0]), "shape": [0.5, 0.5], "crops": []}
    recs = [to_record(sigs[0]), {**to_record(sigs[1]), "v": 99}, short, to_record(sigs[2])]
    signed, cols = columns_from_records(recs, ["s"] * 4)
    assert signed.tolist() == [True, False, True, True]
    want = columns([from_record(r, "s") for r in recs if r["v"] == SIGNATURE_VERSION])
    for name in ("content", "phash", "shape", "crops", "cropped"):
        assert np.array_equal(getattr(cols, name), getattr(want, name)), name
    assert cols.shape[1].tolist() == [0.5, 0.5] + [0.0] * 14 and not cols.cropped[1]
    for bad in ({**to_record(sigs[1]), "shape": [True] * 16},  # a bool is not a number
                {**to_record(sigs[1]), "crops": ["0" * 15, "0" * 17] + ["0" * 16] * 6},
                {**to_record(sigs[1]), "phash": "0" * 15 + "G"}, [1]):
        with pytest.raises(DamagedSignatureError, match=r"^shard-2: damaged"):
            columns_from_records([recs[0], recs[2], bad], ["shard-0", "shard-1", "shard-2"])


def test_the_chunks_tile_the_hash_as_few_as_the_pigeonhole_needs():
    # the cost of the index follows its chunks: radius 1 from a distance of 3, and at the
    # default distance three chunks of 21-22 bits (index.py's docstring)
    assert [index.radius(t) for t in (0, 2, 3, 5, 64)] == [0, 0, 1, 1, 1]
    assert index.chunks(5) == [(0, 22), (22, 21), (43, 21)]
    for t in range(140):
        got = index.chunks(t)
        per = index.radius(t) + 1
        offsets, widths = [o for o, _ in got], [w for _, w in got]
        assert offsets == [sum(widths[:i]) for i in range(len(got))] and sum(widths) == 64
        assert widths == sorted(widths, reverse=True) and widths[0] - widths[-1] <= 1
        assert len(got) * per > t or len(got) == 64  # pigeonhole: some chunk is near
        assert (len(got) - 1) * per <= t or len(got) == 3  # and no chunk more than needed


def test_the_index_reads_any_integer_hashes_and_answers_int64_arrays():
    # 64 bits counted whatever the integer type (an XOR read as signed is negative)
    assert popcount(np.array([-1, 5], dtype=np.int64)).tolist() == [64, 2]
    assert popcount(np.array([3], dtype=np.uint64)).dtype == np.int64
    central = [1, 2, 1 << 40, 0xFFFF]  # Python ints: numpy reads them as int64
    pairs, dist = query_pairs(central, central, [0, 1, 2, 3], [0, 1, 1, 0], 5)
    assert pairs.tolist() == [[0, 1], [0, 2]] and dist.tolist() == [2, 2]
    assert pairs.dtype == dist.dtype == np.int64
    assert index.near_pairs(central, central, [0, 1, 2, 3], 5).tolist() == [
        [0, 1], [0, 2], [1, 2]]
    for far in ([0xFF, 0xFF << 56], [0, (1 << 40) - 1]):  # no pair: empty int64 arrays
        pairs, dist = query_pairs(np.array(far, dtype=np.uint64), np.array(far, dtype=np.uint64),
                                  [0, 1], [0, 1], 5)
        assert (pairs.shape, pairs.dtype, dist.shape, dist.dtype) == ((0, 2), np.int64, (0,),
                                                                     np.int64)
        near = index.near_pairs(np.array(far, dtype=np.uint64), np.array(far, dtype=np.uint64),
                                [0, 1], 5)
        assert (near.shape, near.dtype) == ((0, 2), np.int64)
    none = np.zeros(0, dtype=np.uint64)
    assert (index.near_pairs(none, none, [], 5).shape, index.near_pairs(none, none, [], 5).dtype
            ) == ((0, 2), np.int64)
    one_group = query_pairs(np.array([1, 1], dtype=np.uint64), np.array([1, 1], dtype=np.uint64),
                            [0, 1], [0, 0], 5)
    assert one_group[0].shape == (0, 2) and one_group[1].shape == (0,)


def test_the_key_order_is_a_stable_sort_of_keys_of_any_chunk_width():
    rng = np.random.default_rng(5)
    for width in (4, 16, 17, 22):  # 4 bits: every key repeated many times
        keys = rng.integers(0, 1 << width, 3000).astype(np.int32)
        assert index._key_order(keys, width).tolist() == np.argsort(keys, kind="stable").tolist()


def test_a_chunk_s_buckets_are_counted_in_a_table_only_where_its_keys_are_dense():
    # a table of every key costs 2**width slots: at most _TABLE_SLOTS_PER_HASH per hash
    # indexed; sparser chunks search the sorted keys. Both give the same buckets.
    rng = np.random.default_rng(2)
    for width, n, table in ((8, 16, True), (8, 15, False), (5, 2, True), (5, 1, False),
                            (22, 100, False), (4, 100, True)):
        keys = rng.integers(0, 1 << width, n).astype(np.int32)
        probes = rng.integers(0, 1 << width, 50).astype(np.int32)
        with mock.patch.object(index.np, "bincount", wraps=np.bincount) as counted:
            order, lo, count = index._buckets(keys, width, probes)
        assert counted.called == table, (width, n)
        ordered = keys[order]
        assert all((ordered[a:a + c] == p).all() and c == (keys == p).sum()
                   for a, c, p in zip(lo.tolist(), count.tolist(), probes.tolist(), strict=True))


# --- signatures.py, bit for bit: the recipe, the bounds, every message, both column paths ---

def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _le_crc(arr: np.ndarray) -> str:
    little = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
    return f"{zlib.crc32(little.tobytes()):08x}"


def _pattern(h: int, w: int, c: int) -> np.ndarray:
    """A cube of exact float32 values (integers, one division): the same bytes anywhere."""
    y, x = np.mgrid[0:h, 0:w]
    bands = [(x * (3 + k) + y * y * (k + 1)) % 97 for k in range(c)]
    return np.stack(bands, axis=2).astype(np.float32) / np.float32(97)


def test_a_signature_is_pinned_bit_for_bit():
    # 40 x 56: crop step 1, a centre of 38 x 54 whose 16 x 16 cells differ in size
    cube = _pattern(40, 56, 5)
    assert to_record(signature(cube)) == {
        "v": 3, "content": "0404e6f8ec09e1b235cb171824a341c4", "phash": "069001602a500890",
        "shape": [0.446155, 0.443795, 0.448348, 0.448834, 0.448914],
        "crops": ["2680046028400000", "2652046828400800", "265204a82840a810", "06d100602a504000",
                  "461009682a4088d8", "06d000608a554890", "061200602a510890", "061208602a5908d8"]}
    assert perceptual_hash(cube) == signature(cube).phash
    image = cube[..., 1].astype(np.float64)  # an image is hashed as a one-band cube...
    assert perceptual_hashes(image[:20, :36]) == perceptual_hashes(image[:20, :36, None])
    assert len(perceptual_hashes(image[:20, :36])[1]) == 8  # crop step 1 from a side of 8
    assert spectral_shape(image) == (1.0,) and spectral_shape(-image) == (-1.0,)  # ...one band
    low = (cube * 60000).astype(np.float16)  # sums past float16's range: read as float64
    assert perceptual_hashes(low) == perceptual_hashes(low.astype(np.float64))
    assert perceptual_hashes(low[..., 0]) == perceptual_hashes(low[..., 0].astype(np.float64))
    assert spectral_shape(low) == spectral_shape(low.astype(np.float64))


def test_flat_blank_and_partly_non_finite_cubes():
    flat = np.ones((20, 20, 3))  # no frequency but DC: no bit set
    assert perceptual_hashes(flat) == (0, (0,) * 8)
    assert spectral_shape(np.zeros((4, 4, 3))) == (0.0, 0.0, 0.0)  # no norm: zeros
    cube = _pattern(24, 24, 4).astype(np.float64)
    holed = cube.copy()
    holed[-1, :, 2] = np.nan  # the last row has a NaN band: left out of the mean spectrum...
    assert spectral_shape(holed) == spectral_shape(cube[:-1])
    zeroed = cube.copy()
    zeroed[-1] = 0.0  # ...and hashed as black pixels
    assert perceptual_hashes(holed) == perceptual_hashes(zeroed) != perceptual_hashes(cube)
    assert spectral_shape(np.full((3, 3, 2), np.inf)) == (0.0, 0.0)


def test_crop_step_and_sample_grid_at_their_bounds():
    assert [crop_step(*s) for s in [(7, 99), (99, 7), (8, 8), (47, 60), (48, 48), (80, 90),
                                    (112, 200)]] == [0, 0, 1, 1, 2, 2, 4]
    for shape, want in [((64, 64, 2), (64, 64, 2)), ((65, 64), (33, 32)),
                        ((200, 100, 3), (67, 34, 3)), ((100, 200), (34, 67)), ((5000,), (5000,))]:
        cube = np.zeros(shape, dtype=np.float32)
        grid = sample_grid(cube)
        assert grid.shape == want and np.shares_memory(grid, cube), shape


def test_the_content_digest_takes_a_given_crc_only_for_little_endian_c_order_data():
    a = np.arange(6, dtype=np.float32).reshape(2, 3) / np.float32(7)
    cases = [(a, 0xDEADBEEF, "<f4|2,3|deadbeef"),  # native order, C order: the writer's CRC
             (a.astype(np.uint8) + 1, 0xDEADBEEF, "|u1|2,3|deadbeef"),  # no byte order
             (a.astype(">f4"), 0xDEADBEEF, f"<f4|2,3|{_le_crc(a)}"),  # big-endian: bytes read
             (a[:, ::2], 0xDEADBEEF, f"<f4|2,2|{_le_crc(a[:, ::2])}"),  # strided: bytes read
             (a, None, f"<f4|2,3|{_le_crc(a)}"),
             (np.float32(1.5), None, f"<f4|1|{_le_crc(np.float32(1.5))}"),
             (np.zeros((0, 3), np.float32), None, "<f4|0,3|00000000")]
    for arr, crc, text in cases:
        assert content_digest(arr, crc) == _digest(text + "\n"), text
    assert signature(a[None], 0xDEADBEEF).content == _digest("<f4|1,2,3|deadbeef\n")


def test_damaged_records_are_refused_word_for_word():
    good = to_record(signature(_pattern(10, 12, 3)))
    content = "'content' is not a 32-digit hex digest"
    phash = "'phash' is not a 16-digit hex hash"
    shape = "'shape' is not a list of unit-range numbers"
    crops = "'crops' is not a list of 8 16-digit hex hashes"
    for bad, why in [([1], "not an object"), ({}, "no version"),
                     ({**good, "v": True}, "no version"),
                     ({**good, "content": "0" * 31}, content),
                     ({**good, "content": "0" * 33}, content),
                     ({**good, "content": "0" * 31 + "g"}, content),
                     ({**good, "phash": "0" * 15}, phash),
                     ({**good, "phash": "0" * 15 + "g"}, phash),
                     ({**good, "shape": []}, shape), ({**good, "shape": [0.1] * 17}, shape),
                     ({**good, "shape": [1.5]}, shape), ({**good, "shape": [True]}, shape),
                     ({**good, "crops": ""}, crops), ({**good, "crops": {}}, crops),
                     ({**good, "crops": ["0" * 16] * 7}, crops)]:
        with pytest.raises(DamagedSignatureError) as err:
            from_record(bad, "f/%s.json")
        assert str(err.value) == (f"f/%s.json: damaged or foreign frame signature ({why}); rerun "
                                  "dvc-cuvis materialize on its folder, which rebuilds it"), bad
    bare = {k: v for k, v in good.items() if k != "crops"}  # crops may be left out
    assert from_record({**bare, "shape": [1.0]}, "f") == Signature(
        good["content"], int(good["phash"], 16), (1.0,), ())
    assert from_record({**bare, "shape": [-1, 0]}, "f").shape == (-1.0, 0.0)


def test_valid_records_are_read_as_columns_in_one_pass_and_others_one_by_one():
    sigs = [signature(_pattern(10 + k, 12, 3)) for k in range(3)]
    bare = {k: v for k, v in to_record(sigs[2]).items() if k != "crops"}
    recs = [to_record(sigs[0]), {**to_record(sigs[1]), "v": 99}, {**bare, "shape": [1.0]}]
    want = columns([from_record(r, "s") for r in (recs[0], recs[2])])
    ints = {**to_record(sigs[0]), "shape": [1] + [0] * 15}  # 16 ints: read as float64

    def same(cols):
        for name in ("content", "phash", "shape", "crops", "cropped"):
            got, exp = getattr(cols, name), getattr(want, name)
            assert got.dtype == exp.dtype and np.array_equal(got, exp), name

    with mock.patch.object(signatures, "from_record", side_effect=AssertionError):
        signed, cols = columns_from_records(recs, ["s"] * 3)  # no record read one by one
        assert signed.tolist() == [True, False, True]
        same(cols)
        assert columns_from_records([ints], ["s"])[1].shape.dtype == np.float64
    for bad in ([1.5] * 16, [float("inf")] * 16, [1.5]):  # out of range: refused whole
        with pytest.raises(DamagedSignatureError, match="'shape' is not a list of unit-range"):
            columns_from_records([recs[0], {**recs[0], "shape": bad}], ["s0", "s1"])
    ordered = [OrderedDict(recs[0]), recs[1], OrderedDict(recs[2])]  # dict subclasses
    signed, cols = columns_from_records(ordered, ["s"] * 3)  # read one by one
    assert signed.tolist() == [True, False, True]
    same(cols)
    with pytest.raises(ValueError, match="shorter"):  # a name for each record, not fewer
        columns_from_records(ordered, ["s"] * 2)
