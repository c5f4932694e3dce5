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


def bars_shown(enable: bool | None = None, auto: bool = True) -> bool:
    """Whether :func:`progress_bar` shows a bar for ``enable`` (``progress=``), ``auto`` and the
    environment (``INSDEL_PROGRESS``, a terminal on stderr)."""
    if enable is not None and enable is not True and enable is not False:
        enable = check_progress(enable)
    env = os.environ.get("INSDEL_PROGRESS")
    if env is not None:
        return env not in ("0", "false", "False", "")
    if enable is None:
        return bool(auto and sys.stderr.isatty())
    return bool(enable)


def progress_bar(total: int, desc: str, unit: str = "it", enable: bool | None = None,
                 auto: bool = True, log=None):
    """A tqdm bar (a context manager); ``enable=None`` shows it only for long work (``auto``) on a
    terminal.

    ``enable`` is the caller's ``progress=`` argument: None, True or False (a numpy bool too);
    anything else is a TypeError naming ``progress`` (checked before the environment, so a bad
    value is refused whatever ``INSDEL_PROGRESS`` says). ``INSDEL_PROGRESS=0`` or ``1`` in the
    environment forces it off or on. A disabled bar is a shared do-nothing context (no generator,
    no import: it is entered on every curve call). ``log``: a ``log(line)`` callable (the
    runner's logger) that gets one plain line when the stage starts and no bar is shown (not a
    terminal, ``INSDEL_PROGRESS=0``), so a long stage is named in a pipe or a log file too.
    """
    if enable is not None and enable is not True and enable is not False:  # the common values
        enable = check_progress(enable)  # a TypeError naming progress= (e.g. progress="no")
    if not bars_shown(enable, auto):
        if log is not None:
            log(f"{desc}: started ({total:,} {unit}{'s' if total != 1 else ''})")
        return _NULL
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=False, dynamic_ncols=True)
