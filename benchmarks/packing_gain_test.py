#!/usr/bin/env python3
"""Tests for benchmarks/packing_gain.py. Every expected number is worked out
by hand in the comments, not computed with the script's functions.

Usage: python3 benchmarks/packing_gain_test.py [-v]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

sys.dont_write_bytecode = True
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import packing_gain as pg  # noqa: E402

SCRIPT = HERE / "packing_gain.py"


class HandWorkedCounts(unittest.TestCase):
    # hidden H = 4, FFN F = 16, 1 layer, S = 4, lengths [4, 2].
    # GEMM FLOPs per token (2 per multiply-add):
    #   QKV    2 * 4 * 12 =  96
    #   out    2 * 4 * 4  =  32
    #   FFN1   2 * 4 * 16 = 128
    #   FFN2   2 * 16 * 4 = 128
    #   total             = 384
    # Attention, Q K^T plus P V over all heads: 2*Lq*Lk*H + 2*Lq*Lk*H
    # = 16 * Lq * Lk.
    #   dense:  tokens 2 * 4 = 8 -> 8 * 384 = 3072;
    #           attention 16 * (4*4 + 4*4) = 16 * 32 = 512;  total 3584
    #   skip:   3072 + 16 * (4*4 + 4*2) = 3072 + 16 * 24 = 3072 + 384 = 3456
    #   packed: tokens 4 + 2 = 6 -> 6 * 384 = 2304;
    #           attention 16 * (4*4 + 2*2) = 16 * 20 = 320;  total 2624
    # Elementwise bytes per token per layer, 2 bytes an element:
    #   (10 * 4 + 2 * 16) * 2 = 72 * 2 = 144
    #   padded 8 * 144 = 1152; packed 6 * 144 = 864.
    TINY = pg.Model(hidden=4, layers=1, heads=1, ffn=16, bytes_per_element=2)

    def test_tiny_flops_and_bytes(self):
        c = pg.batch_costs(self.TINY, 4, np.array([4, 2]))
        self.assertEqual(int(c["flops_dense"]), 3584)
        self.assertEqual(int(c["flops_skip"]), 3456)
        self.assertEqual(int(c["flops_packed"]), 2624)
        self.assertEqual(int(c["bytes_padded"]), 1152)
        self.assertEqual(int(c["bytes_packed"]), 864)

    def test_head_count_does_not_change_flops(self):
        # Two heads of width 2: Q K^T is 2 heads * 2*Lq*Lk*2 = 2*Lq*Lk*4,
        # the same as one head of width 4; so the same 3584 / 3456 / 2624.
        two_heads = pg.Model(hidden=4, layers=1, heads=2, ffn=16)
        c = pg.batch_costs(two_heads, 4, np.array([4, 2]))
        self.assertEqual([int(c[k]) for k in ("flops_dense", "flops_skip", "flops_packed")],
                         [3584, 3456, 2624])

    def test_layers_multiply(self):
        # Three layers: 3 * 3584 = 10752, 3 * 3456 = 10368, 3 * 2624 = 7872,
        # 3 * 1152 = 3456 and 3 * 864 = 2592 bytes.
        three = pg.Model(hidden=4, layers=3, heads=1, ffn=16)
        c = pg.batch_costs(three, 4, np.array([4, 2]))
        self.assertEqual([int(c[k]) for k in ("flops_dense", "flops_skip", "flops_packed",
                                              "bytes_padded", "bytes_packed")],
                         [10752, 10368, 7872, 3456, 2592])

    def test_batched_leading_axis(self):
        # Two batches at once, [4, 2] and [1, 1]. The second, by hand:
        #   dense  = 3584 (it does not depend on the lengths);
        #   skip   = 3072 + 16 * (4*1 + 4*1) = 3072 + 128 = 3200;
        #   packed = 2 * 384 + 16 * (1 + 1) = 768 + 32 = 800.
        c = pg.batch_costs(self.TINY, 4, np.array([[4, 2], [1, 1]]))
        self.assertEqual(c["flops_dense"].tolist(), [3584, 3584])
        self.assertEqual(c["flops_skip"].tolist(), [3456, 3200])
        self.assertEqual(c["flops_packed"].tolist(), [2624, 800])

    def test_lengths_outside_range_are_refused(self):
        with self.assertRaises(ValueError):
            pg.batch_costs(self.TINY, 4, np.array([5, 2]))
        with self.assertRaises(ValueError):
            pg.batch_costs(self.TINY, 4, np.array([0, 2]))


class FullLengthsGiveNoGain(unittest.TestCase):
    # bert-base (H 768, F 3072, 12 layers), S = 128, B = 4, every length 128.
    # GEMM FLOPs per token per layer: 6*768^2 + 2*768^2 + 4*768*3072
    #   = 3,538,944 + 1,179,648 + 9,437,184 = 14,155,776.
    # Per layer: 512 tokens * 14,155,776 = 7,247,757,312
    #   + attention 4 * 768 * (4 * 128 * 128) = 3072 * 65,536 = 201,326,592
    #   = 7,449,083,904; times 12 layers = 89,389,006,848 for all three
    # variants (Lq = Lk = 128 everywhere), so every ratio is exactly 1.
    BASE = pg.Model()

    def test_all_three_equal(self):
        c = pg.batch_costs(self.BASE, 128, np.full(4, 128))
        for key in ("flops_dense", "flops_skip", "flops_packed"):
            self.assertEqual(int(c[key]), 89_389_006_848, key)
        self.assertEqual(int(c["bytes_padded"]), int(c["bytes_packed"]))

    def test_measured_ratios_are_one(self):
        # The file distribution with every length S: each sampled batch is
        # all-S, so mean, p5 and p95 of every ratio are 1.
        for seq_len in (128, 384):
            row = pg.measure(self.BASE, "file", seq_len, 8, batches=50, seed=1,
                             pool=np.array([seq_len]))
            for key in ("flops_dense_over_packed", "flops_skip_over_packed",
                        "bytes_padded_over_packed", "fill"):
                self.assertEqual(row[key], {"mean": 1.0, "p5": 1.0, "p95": 1.0}, key)


class Sampling(unittest.TestCase):
    def test_uniform_range_and_mean(self):
        # Integers uniform on [8, 128]: mean (8 + 128) / 2 = 68.
        rng = np.random.default_rng(0)
        lengths, clipped = pg.sample_lengths(rng, "uniform", 128, (1000, 256), min_length=8)
        self.assertEqual((int(lengths.min()), int(lengths.max())), (8, 128))
        self.assertAlmostEqual(float(lengths.mean()), 68.0, delta=0.5)
        self.assertEqual(clipped, 0.0)

    def test_squad_bounds(self):
        # At S = 384 lengths lie in [32, 384]. Full windows: the point mass
        # 263 / 10833 = 0.0243, plus the lognormal's tail rounded to 384:
        # P(X >= 383.5) = P(Z >= ln(383.5 / 165) / 0.35 = 2.41) = 0.0080,
        # so 0.0243 + 0.9757 * 0.0080 = 0.0321.
        rng = np.random.default_rng(0)
        lengths, _ = pg.sample_lengths(rng, "squad", 384, (200_000,))
        self.assertGreaterEqual(int(lengths.min()), 32)
        self.assertEqual(int(lengths.max()), 384)
        self.assertAlmostEqual(float(np.mean(lengths == 384)), 0.0321, delta=0.002)
        # At S = 128 every length is clipped to 128.
        short, clipped = pg.sample_lengths(rng, "squad", 128, (10_000,))
        self.assertEqual(int(short.max()), 128)
        self.assertGreater(clipped, 0.5)

    def test_rows_are_reproducible(self):
        m = pg.Model()
        a = pg.measure(m, "uniform", 384, 32, batches=100, seed=7)
        b = pg.measure(m, "uniform", 384, 32, batches=100, seed=7)
        c = pg.measure(m, "uniform", 384, 32, batches=100, seed=8)
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)

    def test_lengths_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "lengths.txt"
            path.write_text("# comment\n100\n\n 200 \n400\n")
            self.assertEqual(pg.read_lengths_file(path).tolist(), [100, 200, 400])
            path.write_text("5\n0\n")
            with self.assertRaises(ValueError):
                pg.read_lengths_file(path)


class CommandLine(unittest.TestCase):
    def test_table_and_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            lengths = Path(tmp) / "lengths.txt"
            lengths.write_text("64\n128\n")
            out = Path(tmp) / "out.json"
            run = subprocess.run(
                [sys.executable, str(SCRIPT), "--distribution", "file",
                 "--lengths-file", str(lengths), "--seq-lengths", "64,128",
                 "--batch-sizes", "2,4", "--batches", "20", "--json", str(out)],
                capture_output=True, text=True, check=True)
            table_rows = [line for line in run.stdout.splitlines()
                          if line.startswith("| 64 ") or line.startswith("| 128 ")]
            self.assertEqual(len(table_rows), 4)
            data = json.loads(out.read_text())
            self.assertEqual(len(data["rows"]), 4)
            # S = 64: the file's 128 is clipped to 64, so every batch is full.
            s64 = [r for r in data["rows"] if r["seq_len"] == 64]
            for row in s64:
                self.assertEqual(row["flops_skip_over_packed"]["mean"], 1.0)
                self.assertGreater(row["clipped_fraction"], 0)

    def test_file_needs_a_path(self):
        run = subprocess.run([sys.executable, str(SCRIPT), "--distribution", "file"],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 2)
        self.assertIn("--lengths-file", run.stderr)


if __name__ == "__main__":
    unittest.main()
