"""Composable formats: format rewrite rules and the format_decompose pass.

    rule = st.FormatRewriteRule("4", bsr(4), ["A"], {"I": ["IO", "II"], "J": ["JO", "JI"]},
                                lambda i, j: (i // 4, j // 4, i % 4, j % 4),
                                lambda io, jo, ii, ji: (io * 4 + ii, jo * 4 + ji))
    g = st.format_decompose(csrmm, [rule])
    st.preprocess_part(g)   # the data movement into the new formats (run once per graph)
    st.compute_part(g)      # the computation on them

A rule may also live in the format function itself (its T.func_attr holds
"buffer_to_rewrite", "iterator_map", "idx_map" and "inv_idx_map"):
``st.FormatRewriteRule("4", bsr_script, params={"block_size": 4})``.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence, Union

from . import _C
from .compiler import PrimFunc, parse, specialize


class _Coordinate:
    """A symbolic coordinate: index maps written as Python lambdas are called
    with these and record the script expression they compute."""

    def __init__(self, text: str):
        self.text = text

    def _binary(self, op: str, other, reverse: bool = False) -> "_Coordinate":
        other_text = _text(other)
        a, b = (other_text, self.text) if reverse else (self.text, other_text)
        return _Coordinate(f"({a} {op} {b})")

    def __add__(self, o): return self._binary("+", o)
    def __radd__(self, o): return self._binary("+", o, True)
    def __sub__(self, o): return self._binary("-", o)
    def __rsub__(self, o): return self._binary("-", o, True)
    def __mul__(self, o): return self._binary("*", o)
    def __rmul__(self, o): return self._binary("*", o, True)
    def __floordiv__(self, o): return self._binary("//", o)
    def __rfloordiv__(self, o): return self._binary("//", o, True)
    def __mod__(self, o): return self._binary("%", o)
    def __rmod__(self, o): return self._binary("%", o, True)
    def __neg__(self): return _Coordinate(f"(-{self.text})")

    def __truediv__(self, o):
        raise TypeError("index maps are integer arithmetic: use // and %, not /")

    __rtruediv__ = __truediv__

    def __bool__(self):
        raise TypeError("an index map must be arithmetic on its coordinates (no comparisons or branches)")


def _text(value) -> str:
    if isinstance(value, _Coordinate):
        return value.text
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"an index map may combine coordinates with ints only, got {type(value).__name__}")
    return str(value)


def _lambda_text(fn: Callable, params: Sequence[str], what: str) -> str:
    """The script spelling of a Python index map, e.g. ``(lambda i, j: (i // 4, j // 4))``."""
    result = fn(*[_Coordinate(p) for p in params])
    results = result if isinstance(result, tuple) else (result,)
    try:
        body = ", ".join(_text(r) for r in results)
    except TypeError as e:
        raise TypeError(f"FormatRewriteRule: {what}: {e}") from None
    return f"(lambda {', '.join(params)}: ({body},))" if len(results) == 1 else \
        f"(lambda {', '.join(params)}: ({body}))"


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class FormatRewriteRule:
    """A composable format and how a buffer of a computation maps onto it.

    ``FormatRewriteRule(name, format, buffers_to_rewrite, iterator_map, idx_map, inv_idx_map)``:
    ``format`` is a format function (a script or a PrimFunc whose body is
    ``pass``), ``iterator_map`` maps each original iterator to the format
    iterators standing for it, ``idx_map`` / ``inv_idx_map`` map coordinates
    both ways (Python lambdas over ints, or omitted when the format's
    T.func_attr holds the rule). ``params`` fixes symbolic parameters of the
    format (``block_size``). ``name`` suffixes everything the rule adds.
    """

    def __init__(self, name: str, format: Union[str, PrimFunc],
                 buffers_to_rewrite: Optional[Sequence[str]] = None,
                 iterator_map: Optional[Mapping[str, Sequence[str]]] = None,
                 idx_map: Optional[Callable] = None, inv_idx_map: Optional[Callable] = None,
                 params: Optional[Mapping[str, int]] = None):
        self.name = str(name)
        func = parse(format) if isinstance(format, str) else format
        if not isinstance(func, PrimFunc):
            raise TypeError(f"FormatRewriteRule: format must be a script or a PrimFunc, got {type(format).__name__}")
        given = [buffers_to_rewrite is not None, iterator_map is not None, idx_map is not None,
                 inv_idx_map is not None]
        if any(given) and not all(given):
            raise ValueError("FormatRewriteRule: give buffers_to_rewrite, iterator_map, idx_map and inv_idx_map "
                             "together, or none of them (the format's T.func_attr then holds the rule)")
        if all(given):
            func = self._with_rule(func, buffers_to_rewrite, iterator_map, idx_map, inv_idx_map)
        if params:
            func = specialize(func, **params)
        self.format = func

    @staticmethod
    def _with_rule(func: PrimFunc, buffers, iterator_map, idx_map, inv_idx_map) -> PrimFunc:
        if isinstance(buffers, str):
            buffers = [buffers]
        original = list(iterator_map.keys())
        stored = [n for names in iterator_map.values() for n in names]
        # The inverse map's parameters follow the rewritten buffer's axes, which
        # the format declares; the lambda's own names do not matter.
        inv_params = [f"_c{q}" for q in range(len(stored))]
        entries = {
            "buffer_to_rewrite": "[" + ", ".join(_quote(b) for b in buffers) + "]",
            "iterator_map": "{" + ", ".join(f"{_quote(k)}: [" + ", ".join(_quote(v) for v in vs) + "]"
                                            for k, vs in iterator_map.items()) + "}",
            "idx_map": _lambda_text(idx_map, [f"_o{t}" for t in range(len(original))], "idx_map"),
            "inv_idx_map": _lambda_text(inv_idx_map, inv_params, "inv_idx_map"),
        }
        text = func.script()
        marker = "T.func_attr({"
        if marker not in text:
            raise ValueError("FormatRewriteRule: the format function has no T.func_attr to extend")
        extra = "".join(f"{_quote(k)}: {v}, " for k, v in entries.items())
        return parse(text.replace(marker, marker + extra, 1), f"<format {func.name}>")

    def __repr__(self) -> str:
        return f"FormatRewriteRule({self.name!r}, {self.format.name})"


def format_decompose(f: PrimFunc, rules: Sequence[FormatRewriteRule], disjoint: bool = False) -> PrimFunc:
    """Rewrites stage-I ``f`` to compute on the rules' formats: preprocess
    iterations (tagged ``preprocess``) copy the data in, compute iterations
    work on the new formats and add into one output after one init. With
    ``disjoint=True`` the formats promise to cover disjoint output elements
    (a partition of the rows): each copy keeps the init and writes its own
    outputs. See csrc/compiler/transforms/format_decompose.h."""
    if isinstance(rules, FormatRewriteRule):
        rules = [rules]
    for r in rules:
        if not isinstance(r, FormatRewriteRule):
            raise TypeError(f"format_decompose: rules must be FormatRewriteRule objects, got {type(r).__name__}")
    return _C.format_decompose(f, [(r.name, r.format) for r in rules], bool(disjoint))


def preprocess_part(f: PrimFunc) -> PrimFunc:
    """The preprocess iterations of a decomposed function, as a function of its own."""
    return _C.preprocess_part(f)


def compute_part(f: PrimFunc, with_init: bool = True) -> PrimFunc:
    """Everything but the preprocess (and, with ``with_init=False``, the init
    iterations: the caller zeroes the output and the formats accumulate)."""
    return _C.compute_part(f, with_init)
