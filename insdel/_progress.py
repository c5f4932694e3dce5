"""Progress bars (tqdm) that stay quiet in tests and pipes unless asked for."""

from __future__ import annotations

import contextlib
import os
import sys

from ._validation import check_progress


class _NullBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass


_NULL = contextlib.nullcontext(_NullBar())


def progress_bar(total: int, desc: str, unit: str = "it", enable: bool | None = None,
                 auto: bool = True):
    """A tqdm bar (a context manager); ``enable=None`` shows it only for long work (``auto``) on a
    terminal.

    ``enable`` is the caller's ``progress=`` argument: None, True or False (a numpy bool too);
    anything else is a TypeError naming ``progress`` (checked before the environment, so a bad
    value is refused whatever ``INSDEL_PROGRESS`` says). ``INSDEL_PROGRESS=0`` or ``1`` in the
    environment forces it off or on. A disabled bar is a shared do-nothing context (no generator,
    no import: it is entered on every curve call).
    """
    if enable is not None and enable is not True and enable is not False:  # the common values
        enable = check_progress(enable)  # a TypeError naming progress= (e.g. progress="no")
    env = os.environ.get("INSDEL_PROGRESS")
    if env is not None:
        enable = env not in ("0", "false", "False", "")
    if enable is None:
        enable = auto and sys.stderr.isatty()
    if not enable:
        return _NULL
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=False, dynamic_ncols=True)
