r"""ECMA-262 patterns rewritten in RE2 syntax, with the same meaning.

JSON Schema says a ``pattern`` (and a key of ``patternProperties``) is an ECMA-262
regular expression, read with the ``u`` flag's semantics (the JSON Schema Test
Suite asks for that). `to_re2` rewrites one for RE2, where RE2's own reading
would differ:

- ``\d``, ``\w`` and ``\s`` become explicit sets: ASCII digits, ASCII word
  characters, and ECMA-262's white space and line terminators (U+FEFF included);
  ``.`` matches anything but the four line terminators; ``\D``, ``\W``, ``\S``
  their complements, inside a class too.
- ``\uXXXX`` (surrogate pairs joined), ``\u{...}``, ``\xHH`` and ``\cX`` become
  code points; ``\p{...}`` general categories (short or long names,
  ``General_Category=``) and ``Script=`` become RE2's names.
- Inside a class, every literal is written as a code point, so nothing in it
  (``[:alpha:]``, a ``^`` or a ``-``) takes a meaning RE2 gives it and ECMA-262 does not.
- ``(?<name>...)`` becomes a plain group: the name changes nothing about what matches.

Refused with `PatternError`, whose message says why: backreferences, lookahead
and lookbehind (RE2 has neither: they need backtracking), inline flags and other
``(?`` groups that are not ECMA-262, escapes that ECMA-262's ``u`` mode does not
allow, Unicode properties RE2 lacks, and what the ``jsonschema-rs`` backend's
engine cannot read either (an empty class ``[]`` or ``[^]``, ``\0``, ``[\b]``, a
lone ``{``), so that both backends accept exactly the same patterns.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["PatternError", "to_re2"]

_MAX_CODE_POINT: Final = 0x10FFFF
_WORD: Final = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_DIGIT: Final = ((0x30, 0x39),)
# ECMA-262 WhiteSpace and LineTerminator: what \s matches.
_SPACE: Final = (
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
)
_LINE_ENDS: Final = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_ASCII: Final = ((0x00, 0x7F),)
_SETS: Final = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
_CONTROLS: Final = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
_SYNTAX: Final = frozenset("^$\\.*+?()[]{}|/")
_DIGITS: Final = frozenset("0123456789")

_CATEGORIES: Final = {
    "Cased_Letter": "LC",
    "Close_Punctuation": "Pe",
    "Connector_Punctuation": "Pc",
    "Control": "Cc",
    "Currency_Symbol": "Sc",
    "Dash_Punctuation": "Pd",
    "Decimal_Number": "Nd",
    "Enclosing_Mark": "Me",
    "Final_Punctuation": "Pf",
    "Format": "Cf",
    "Initial_Punctuation": "Pi",
    "Letter": "L",
    "Letter_Number": "Nl",
    "Line_Separator": "Zl",
    "Lowercase_Letter": "Ll",
    "Mark": "M",
    "Combining_Mark": "M",
    "Math_Symbol": "Sm",
    "Modifier_Letter": "Lm",
    "Modifier_Symbol": "Sk",
    "Nonspacing_Mark": "Mn",
    "Number": "N",
    "Open_Punctuation": "Ps",
    "Other": "C",
    "Other_Letter": "Lo",
    "Other_Number": "No",
    "Other_Punctuation": "Po",
    "Other_Symbol": "So",
    "Paragraph_Separator": "Zp",
    "Private_Use": "Co",
    "Punctuation": "P",
    "Separator": "Z",
    "Space_Separator": "Zs",
    "Spacing_Mark": "Mc",
    "Surrogate": "Cs",
    "Symbol": "S",
    "Titlecase_Letter": "Lt",
    "Unassigned": "Cn",
    "Uppercase_Letter": "Lu",
    "cntrl": "Cc",
    "digit": "Nd",
    "punct": "P",
}
_SHORT_CATEGORIES: Final = frozenset(_CATEGORIES.values())
_QUANTIFIER = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
_GROUP_NAME = re.compile(r"<([^>]*)>")


class PatternError(ValueError):
    """A pattern that cannot run on RE2 with its ECMA-262 meaning; the message says why."""


def to_re2(pattern: str) -> str:
    """``pattern`` (ECMA-262) rewritten in RE2 syntax with the same meaning.

    Raises:
        PatternError: the pattern uses something RE2 cannot do, or is not valid ECMA-262.
    """
    return _Translator(pattern).run()


def _point(code: int) -> str:
    return f"\\x{{{code:X}}}"


def _ranges(ranges: tuple[tuple[int, int], ...] | list[tuple[int, int]]) -> str:
    return "".join(_point(lo) if lo == hi else f"{_point(lo)}-{_point(hi)}" for lo, hi in ranges)


def _complement(ranges: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    start = 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= _MAX_CODE_POINT:
        out.append((start, _MAX_CODE_POINT))
    return out


class _Translator:
    """One pass over an ECMA-262 pattern, writing RE2 syntax."""

    __slots__ = ("_at", "_pattern")

    def __init__(self, pattern: str) -> None:
        self._pattern = pattern
        self._at = 0

    def _peek(self, offset: int = 0) -> str:
        at = self._at + offset
        return self._pattern[at] if at < len(self._pattern) else ""

    def run(self) -> str:
        out: list[str] = []
        text = self._pattern
        while self._at < len(text):
            char = text[self._at]
            if char == "\\":
                out.append(self._escape_outside())
            elif char == "[":
                out.append(self._class())
            elif char == ".":
                out.append(f"[^{_ranges(_LINE_ENDS)}]")
                self._at += 1
            elif char == "(":
                out.append(self._group())
            elif char == "{":
                found = _QUANTIFIER.match(text, self._at)
                if found is None:
                    raise PatternError(
                        "a '{' that does not start a count such as {2,5} must be written \\{"
                    )
                out.append(found.group())
                self._at = found.end()
            else:
                out.append(char)
                self._at += 1
        return "".join(out)

    def _group(self) -> str:
        text = self._pattern
        if not text.startswith("(?", self._at):
            self._at += 1
            return "("
        rest = text[self._at + 2 : self._at + 4]
        if rest[:1] in ("=", "!") or rest in ("<=", "<!"):
            raise PatternError(
                "it uses lookahead or lookbehind ((?=, (?!, (?<=, (?<!), which RE2 cannot "
                "run in linear time; rewrite the pattern without it"
            )
        if rest[:1] == ":":
            self._at += 3
            return "(?:"
        name = _GROUP_NAME.match(text, self._at + 2) if rest[:1] == "<" else None
        if name is not None and name.group(1):
            self._at = name.end()
            return "("  # a name changes nothing about what matches
        raise PatternError(
            f"{text[self._at : self._at + 4]!r} is not an ECMA-262 group; use (...), (?:...) "
            "or (?<name>...), and no inline flags"
        )

    def _escape_outside(self) -> str:
        kind, value = self._escape(in_class=False)
        if kind == "char":
            return _point(int(value))
        return value if kind == "anchor" else f"[{value}]"

    def _escape(self, *, in_class: bool) -> tuple[str, str]:
        r"""Read the escape at the cursor.

        Returns:
            ("char", code point in decimal), ("set", RE2 class contents) or
            ("anchor", RE2's ``\b`` or ``\B``, whose ASCII meaning is ECMA-262's).
        """
        text = self._pattern
        self._at += 1
        char = self._peek()
        if not char:
            raise PatternError("it ends with a lone backslash")
        self._at += 1
        if char in _SETS:
            return "set", _ranges(_SETS[char])
        if char.lower() in _SETS:
            return "set", _ranges(_complement(_SETS[char.lower()]))
        if char in "bB":
            if in_class:
                raise PatternError(
                    f"\\{char} in a class: the engine of jsonschema-rs cannot read it; "
                    "write \\x08 for a backspace"
                )
            return "anchor", f"\\{char}"
        if char in _CONTROLS:
            return "char", str(_CONTROLS[char])
        if char == "c":
            letter = self._peek()
            if not ("a" <= letter.lower() <= "z"):
                raise PatternError("\\c must be followed by a letter (\\cA to \\cZ)")
            self._at += 1
            return "char", str(ord(letter) % 32)
        if char == "0" and self._peek() not in _DIGITS:
            raise PatternError("the engine of jsonschema-rs cannot read \\0; write \\x00 instead")
        if char in _DIGITS or char == "k":
            raise PatternError(
                f"it uses a backreference (\\{char}...), which needs backtracking; RE2 runs "
                "patterns in linear time and has none, so rewrite the pattern without it"
            )
        if char == "x":
            digits = text[self._at : self._at + 2]
            if len(digits) != 2 or not _is_hex(digits):
                raise PatternError("\\x must be followed by two hexadecimal digits")
            self._at += 2
            return "char", str(int(digits, 16))
        if char == "u":
            return "char", str(self._unicode_escape())
        if char in "pP":
            return "set", self._property(negated=char == "P")
        if char in _SYNTAX or (in_class and char == "-"):
            return "char", str(ord(char))
        raise PatternError(f"\\{char} is not an escape ECMA-262 allows in a pattern")

    def _unicode_escape(self) -> int:
        text = self._pattern
        if self._peek() == "{":
            end = text.find("}", self._at)
            digits = text[self._at + 1 : end] if end != -1 else ""
            if not digits or not _is_hex(digits) or int(digits, 16) > _MAX_CODE_POINT:
                raise PatternError("\\u{...} must hold a code point in hexadecimal, at most 10FFFF")
            self._at = end + 1
            code = int(digits, 16)
        else:
            digits = text[self._at : self._at + 4]
            if len(digits) != 4 or not _is_hex(digits):
                raise PatternError("\\u must be followed by four hexadecimal digits")
            self._at += 4
            code = int(digits, 16)
            if 0xD800 <= code <= 0xDBFF and text.startswith("\\u", self._at):
                low = text[self._at + 2 : self._at + 6]
                if len(low) == 4 and _is_hex(low) and 0xDC00 <= int(low, 16) <= 0xDFFF:
                    self._at += 6
                    return 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)
        if 0xD800 <= code <= 0xDFFF:
            raise PatternError(f"\\u{code:04X} is a lone surrogate, which RE2 cannot match")
        return code

    def _property(self, *, negated: bool) -> str:
        text = self._pattern
        end = text.find("}", self._at)
        if self._peek() != "{" or end == -1:
            raise PatternError("\\p and \\P must be followed by a property in braces: \\p{L}")
        body = text[self._at + 1 : end]
        self._at = end + 1
        name, _, value = body.partition("=")
        if value and name in ("General_Category", "gc"):
            short = _CATEGORIES.get(value, value)
        elif value and name in ("Script", "sc"):
            short = value
        elif not value and (body in _CATEGORIES or body in _SHORT_CATEGORIES):
            short = _CATEGORIES.get(body, body)
        elif not value and body in ("Any", "ASCII"):
            short = body
        else:
            raise PatternError(
                f"RE2 knows no Unicode property {body!r}; it has the general categories "
                "(\\p{L}, \\p{Nd}, ...) and the scripts (\\p{Script=Greek})"
            )
        if short == "ASCII":
            return _ranges(_complement(_ASCII) if negated else _ASCII)
        if not re.fullmatch(r"[A-Za-z_]+", short):
            raise PatternError(f"RE2 knows no Unicode property {body!r}")
        return f"\\{'P' if negated else 'p'}{{{short}}}"

    def _class(self) -> str:
        self._at += 1
        negated = self._peek() == "^"
        if negated:
            self._at += 1
        if self._peek() == "]":
            raise PatternError("the engine of jsonschema-rs cannot read an empty class [] or [^]")
        atoms: list[tuple[str, str]] = []
        while True:
            char = self._peek()
            if not char:
                raise PatternError("a character class '[' is never closed with ']'")
            if char == "]":
                self._at += 1
                break
            if char == "\\":
                atoms.append(self._escape(in_class=True))
            else:
                atoms.append(("dash" if char == "-" else "char", str(ord(char))))
                self._at += 1
        return f"[{'^' if negated else ''}{_class_body(atoms)}]"


def _class_body(atoms: list[tuple[str, str]]) -> str:
    """RE2 class contents for the atoms of an ECMA-262 class; a raw "-" between two is a range."""
    body: list[str] = []
    index = 0
    while index < len(atoms):
        kind, value = atoms[index]
        if index + 2 < len(atoms) and atoms[index + 1][0] == "dash" and kind != "dash":
            high_kind, high = atoms[index + 2]
            if kind == "set" or high_kind == "set":
                raise PatternError("a range in a class must join two characters, as in a-z")
            if int(value) > int(high):
                raise PatternError(
                    f"the range {chr(int(value))!r}-{chr(int(high))!r} is out of order"
                )
            body.append(f"{_point(int(value))}-{_point(int(high))}")
            index += 3
            continue
        body.append(value if kind == "set" else _point(int(value)))
        index += 1
    return "".join(body)


def _is_hex(digits: str) -> bool:
    return all(char in "0123456789abcdefABCDEF" for char in digits)
