"""Registries by name: one meaning per verb everywhere (CONTRIBUTING.md, *Registry verbs*).

``available() -> list[str]`` (sorted names), ``get(name)`` (the registered entry itself, nothing
built or loaded), ``options_of(name) -> dict`` (option -> default, :data:`REQUIRED` where there is
none), ``register(name, entry, *, overwrite=False)`` / ``unregister(name)`` where users may add
entries, and one verb that makes something: ``build`` (an instance) or ``load`` (data). An unknown
name is an :class:`UnknownNameError` (a ``ValueError``) naming the registry's kind, the name, the
closest names and the available ones.
"""

from __future__ import annotations

import copy
import difflib
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["UnknownNameError", "UnknownOptionError", "Registry", "REQUIRED", "signature_options",
           "check_options", "closest_names"]

#: The default :func:`options_of` gives an option that has none (a required option, or one the
#: entry resolves itself): ``inspect.Parameter.empty``.
REQUIRED = inspect.Parameter.empty


class UnknownNameError(ValueError):
    """An unknown name in a registry. The message names the registry's kind, the name, the
    closest names ("Did you mean ...?") and the available names; the attributes ``kind``,
    ``name`` and ``available`` hold them."""

    kind: str = ""
    name: Any = None
    available: list[str] = []

    @classmethod
    def of(cls, kind: str, name: Any, available: Iterable[str], *,
           candidates: Iterable[str] | None = None, note: str = "") -> UnknownNameError:
        """The error for ``name`` in the registry of ``kind`` (``candidates``: the names
        "Did you mean" picks from, default ``available``; ``note``: a sentence added at the
        end)."""
        names = list(available)
        pool = list(dict.fromkeys(candidates if candidates is not None else names))
        close = closest_names(str(name), pool, n=3, fallback=False)
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        msg = (f"unknown {kind} {name!r}.{hint} Available: {', '.join(names) or '(none)'}."
               + (f" {note}" if note else ""))
        err = cls(msg)
        err.kind, err.name, err.available = kind, name, names
        return err


class UnknownOptionError(TypeError, ValueError):
    """An option (keyword argument, parameter, configuration key) the thing does not take.

    One message format everywhere: ``"<thing>: unknown option 'x'; did you mean 'y'? (valid
    options: a, b)"`` (``noun`` "key" or "parameter" where that is the word). It is a
    ``TypeError``, what Python raises for an unexpected keyword argument (and what the attribution
    methods and policies raised), and a ``ValueError``, what the metric and removal registries and
    the configuration raised: every existing ``except`` clause keeps catching it. The attributes
    ``thing``, ``unknown`` (the unknown names), ``closest`` and ``valid`` hold the parts.
    """

    thing: str = ""
    unknown: list = []
    closest: list = []
    valid: list = []

    @classmethod
    def of(cls, thing: str, unknown: Iterable, valid: Iterable[str], *, noun: str = "option",
           note: str = "", prefix: str = "") -> UnknownOptionError:
        """The error for the ``unknown`` names of ``thing`` (a message prefix such as
        ``"metric 'x'"`` or a configuration file), whose valid names are ``valid`` (``note``: a
        sentence added at the end; ``prefix``: written before each unknown name, e.g. a
        configuration table's dotted path)."""
        unknown, valid = list(unknown), [str(v) for v in valid]
        closest = [c for k in unknown for c in closest_names(str(k), valid)]
        names = ", ".join(repr(f"{prefix}{k}") for k in unknown)
        hint = f"; did you mean {', '.join(map(repr, closest))}?" if closest else ""
        plural = "s" if len(unknown) > 1 else ""
        err = cls(f"{thing}: unknown {noun}{plural} {names}{hint} (valid {noun}s: "
                  f"{', '.join(valid) or 'none'})." + (f" {note}" if note else ""))
        err.thing, err.unknown, err.closest, err.valid = thing, unknown, closest, valid
        return err


def closest_names(name: str, valid: Iterable[str], *, n: int = 1,
                  fallback: bool = True) -> list[str]:
    """The one "did you mean" rule: the ``n`` valid names closest to ``name`` (difflib's ratio of
    at least 0.5), closest first; with ``fallback``, the only valid name when there is one and
    none is close."""
    valid = list(valid)
    close = difflib.get_close_matches(name, valid, n=n, cutoff=0.5)
    return close or (valid if fallback and len(valid) == 1 else [])


def check_options(thing: str, options: Iterable, valid: Iterable[str], *,
                  noun: str = "option", note: str = "", prefix: str = "",
                  error: type[UnknownOptionError] | None = None) -> None:
    """Refuse the ``options`` ``thing`` does not take: an :class:`UnknownOptionError` (or its
    subclass ``error``) naming them, the closest valid names and the valid ones."""
    valid = list(valid)
    unknown = [k for k in options if k not in valid]
    if unknown:
        raise (error or UnknownOptionError).of(thing, unknown, valid, noun=noun, note=note,
                                               prefix=prefix)


def signature_options(fn: Callable, *, skip: Iterable[str] = ("self",),
                      keyword_only: bool = False) -> dict[str, Any]:
    """Option name -> default of ``fn``'s signature (:data:`REQUIRED` where there is none);
    ``*args`` / ``**kwargs`` and the names in ``skip`` are left out (``keyword_only``: only the
    keyword-only parameters)."""
    out = {}
    for k, p in inspect.signature(fn).parameters.items():
        if k in skip or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if keyword_only and p.kind != p.KEYWORD_ONLY:
            continue
        out[k] = p.default
    return out


class Registry:
    """Entries by name, with the verbs every insdel registry shares.

    Parameters
    ----------
    kind : str
        What an entry is, for messages ("attribution method", "policy", ...).
    entries : dict, optional
        The initial entries; a dict given is used (not copied), so a module's public table
        (``METHODS``, ``PRESETS``) stays the registry's.
    protected : iterable of str
        Names that :meth:`register` may not replace and :meth:`unregister` may not remove
        (the built-ins).
    aliases : mapping, optional
        Other spellings -> names (resolved by :meth:`key`; "Did you mean" picks from both).
    normalize : callable, optional
        Applied to a name before it is looked up (e.g. lower-case).
    check : callable, optional
        ``check(name, entry)`` raises ``TypeError`` for an entry :meth:`register` refuses.
    loader : callable, optional
        Called once, before the first look-up, to fill the registry (lazy imports).
    copy : bool
        :meth:`get` returns a deep copy (presets: a caller may edit its copy).
    error : type
        The :class:`UnknownNameError` subclass raised for an unknown name.
    """

    def __init__(self, kind: str, entries: dict | None = None, *, protected: Iterable[str] = (),
                 aliases: Mapping[str, str] | None = None,
                 normalize: Callable[[str], str] | None = None,
                 check: Callable[[str, Any], None] | None = None,
                 loader: Callable[[Registry], None] | None = None, copy: bool = False,
                 error: type[UnknownNameError] = UnknownNameError) -> None:
        self.kind = kind
        self.entries: dict[str, Any] = {} if entries is None else entries
        self.protected = set(protected)
        self.aliases = dict(aliases or {})
        self._normalize = normalize
        self._check = check
        self._loader = loader
        self._copy = copy
        self.error = error

    def _all(self) -> dict[str, Any]:
        if self._loader is not None:
            loader, self._loader = self._loader, None
            try:
                loader(self)
            except BaseException:
                self._loader = loader
                raise
        return self.entries

    def unknown(self, name: Any, note: str = "") -> UnknownNameError:
        """The error for an unknown ``name``."""
        names = self.available()
        return self.error.of(self.kind, name, names, candidates=names + sorted(self.aliases),
                             note=note)

    def key(self, name: Any) -> str:
        """The registered name ``name`` stands for (an alias resolved); raises the unknown-name
        error."""
        entries = self._all()
        k = name
        if isinstance(name, str):
            k = self._normalize(name) if self._normalize else name
            k = self.aliases.get(k, k)
        if not isinstance(k, str) or k not in entries:
            raise self.unknown(name)
        return k

    def __contains__(self, name: Any) -> bool:
        try:
            self.key(name)
        except UnknownNameError:
            return False
        return True

    def available(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._all())

    def get(self, name: str) -> Any:
        """The entry registered as ``name`` (a deep copy for a registry made with ``copy=True``)."""
        entry = self.entries[self.key(name)]
        return copy.deepcopy(entry) if self._copy else entry

    def register(self, name: str, entry: Any, *, overwrite: bool = False) -> Any:
        """Register ``entry`` as ``name``; returns ``entry``.

        Raises ``TypeError`` for a name that is not a string or an entry refused by the
        registry's check, and ``ValueError`` for a built-in name or a taken one without
        ``overwrite``."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"a {self.kind} name must be a non-empty string; got {name!r}.")
        if self._check is not None:
            self._check(name, entry)
        entries = self._all()
        if name in self.protected:
            raise ValueError(f"{name!r} is a built-in {self.kind} and cannot be replaced; pick "
                             "another name.")
        if name in entries and not overwrite:
            raise ValueError(f"a {self.kind} named {name!r} is already registered "
                             "(overwrite=True replaces it).")
        entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove the user entry ``name`` (built-ins cannot be removed)."""
        if name in self.protected:
            raise ValueError(f"{name!r} is a built-in {self.kind} and cannot be removed.")
        entries = self._all()
        if name not in entries:
            raise self.unknown(name)
        del entries[name]
