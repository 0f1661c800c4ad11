"""report.shrink_png: a plot rewritten with a palette keeps its size in pixels and its colours (on
white) within a palette's rounding, and takes fewer bytes (skipped without Pillow)."""
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import report  # noqa: E402

try:
    from PIL import Image
except ImportError:
    Image = None


@unittest.skipIf(Image is None, "Pillow is not installed")
class ShrinkPng(unittest.TestCase):
    def test_palette_same_picture_fewer_bytes(self):
        d = Path(tempfile.mkdtemp())
        try:
            # a plot-like picture: white, a grid, two antialiased-looking colour ramps
            im = Image.new("RGBA", (320, 200), (255, 255, 255, 255))
            px = im.load()
            for x in range(320):
                for y in range(200):
                    if x % 40 == 0 or y % 40 == 0:
                        px[x, y] = (220, 220, 220, 255)
                    if abs(y - (x // 2)) < 3:
                        px[x, y] = (31, 119, 180, 255 - 60 * abs(y - x // 2))
                    if abs(y - (199 - x // 2)) < 3:
                        px[x, y] = (255, 127, 14, 255)
            path = d / "plot.png"
            im.save(path)
            before = path.stat().st_size
            self.assertTrue(report.shrink_png(path))
            with Image.open(path) as got:
                self.assertEqual(got.size, (320, 200))
                self.assertEqual(got.mode, "P")
                rgb = got.convert("RGB")
                ref = Image.alpha_composite(Image.new("RGBA", im.size, (255, 255, 255, 255)), im).convert("RGB")
                worst = max(abs(a - b) for x in range(0, 320, 7) for y in range(0, 200, 5)
                            for a, b in zip(rgb.getpixel((x, y)), ref.getpixel((x, y))))
            self.assertLessEqual(worst, 24)
            self.assertLess(path.stat().st_size, before)
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main()
