"""insdel reproduce paper-images: options checked before any model is trained or file written."""

from __future__ import annotations

import pytest


# -- options checked before anything is trained or written -----------------------------------------
@pytest.mark.parametrize("arg, bad, err", [
    ("n_images", 2.7, TypeError), ("n_images", 0, ValueError), ("n_images", True, TypeError),
    ("epochs", 2.7, TypeError), ("epochs", 0, ValueError), ("step", 1.5, TypeError),
    ("step", 0, ValueError), ("seed", 0.5, TypeError), ("seed", -1, ValueError)])
def test_paper_images_integer_options(tmp_path, arg, bad, err):
    from insdel.paper_images import run_paper_images

    with pytest.raises(err, match=arg):
        run_paper_images(tmp_path, quick=True, verbose=False, **{arg: bad})
    assert not any(tmp_path.iterdir())  # refused before anything is trained or written


def test_paper_images_too_many_images(tmp_path):
    from insdel.paper_images import run_paper_images

    with pytest.raises(ValueError, match="n_images"):
        run_paper_images(tmp_path, n_images=10_000, epochs=1, verbose=False)


def test_paper_images_quick_is_a_bool(tmp_path):
    from insdel.paper_images import run_paper_images

    with pytest.raises(TypeError, match="quick"):
        run_paper_images(tmp_path, quick="yes", verbose=False)


