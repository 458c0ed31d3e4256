"""py_textstats: word frequencies of a text and column statistics of a CSV table.

Built with `plugins/python/build.sh` against plugin contract 0.2: each tool
declares its output schema (from the TypedDict it returns), reports progress
as it works through its input, and the word count can draw its top words as
a PNG bar chart. The CSV tool asks the person behind the call for the
delimiter when it cannot tell, and says what it needs when no one can answer.
"""

import csv
import io
import math
import re
import struct
import zlib
from collections import Counter
from typing import Dict, List, Literal, Optional, TypedDict

from toolhost_sdk import Annotations, Image, InvalidInput, Output, Tool, progress, tool, user  # noqa: F401  (Tool is the component export)

# Lines (words) or rows (CSV) between two progress reports: the host passes
# on at most one report per 20 ms, so small steps cost nothing extra.
_STEP = 500

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?]+(?:\s|$)")

# Common English function words, left out when `skip_common` is set.
_COMMON = frozenset(
    """a about after all also an and any are as at be because been but by can could did do does for from had
    has have he her him his how i if in into is it its just me more my no not of on one or our out she so
    some than that the their them then there these they this to up us was we were what when which who will
    with would you your""".split()
)


class WordCount(TypedDict):
    """Attributes:
    word: The word, lowercased.
    count: How often it occurs.
    share: Its share of all counted words (0-1).
    """

    word: str
    count: int
    share: float


class WordStats(TypedDict):
    """Word statistics of a text.

    Attributes:
        characters: Characters in the text.
        lines: Lines in the text.
        sentences: Sentences, counted by their closing punctuation.
        words: Words counted (after `min_length` and `skip_common`).
        unique_words: Distinct words among them.
        average_word_length: Mean length of the counted words, in characters.
        top: The most frequent words, most frequent first (ties alphabetical).
    """

    characters: int
    lines: int
    sentences: int
    words: int
    unique_words: int
    average_word_length: float
    top: List[WordCount]


@tool(annotations=Annotations(title="Word frequencies", read_only=True, idempotent=True, open_world=False))
def py_textstats_words(
    text: str, top: int = 10, min_length: int = 1, skip_common: bool = False, chart: bool = False
) -> Output[WordStats]:
    """Count the words of a text: totals, sentences, and the most frequent words with their shares. Reports progress on long texts; optionally draws the top words as a PNG bar chart.

    Args:
        text: The text to analyse (up to the host's input limit).
        top: How many of the most frequent words to list (1-100).
        min_length: Only count words at least this many characters long (1-50).
        skip_common: Leave out common English words (the, and, of, ...).
        chart: Also return a PNG bar chart of the top words, longest bar first.
    """
    if not 1 <= top <= 100:
        raise InvalidInput("top must be between 1 and 100")
    if not 1 <= min_length <= 50:
        raise InvalidInput("min_length must be between 1 and 50")
    lines = text.splitlines() or [""]
    counts: Counter = Counter()
    letters = 0
    sentences = 0
    total = len(lines)
    for start in range(0, total, _STEP):
        for line in lines[start : start + _STEP]:
            sentences += len(_SENTENCE_END.findall(line))
            for match in _WORD.finditer(line):
                word = match.group().lower()
                if len(word) < min_length or (skip_common and word in _COMMON):
                    continue
                counts[word] += 1
                letters += len(word)
        done = min(start + _STEP, total)
        progress.report(done, total, f"counted {done} of {total} lines")
    words = sum(counts.values())
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    stats: WordStats = {
        "characters": len(text),
        "lines": len(text.splitlines()),
        "sentences": sentences,
        "words": words,
        "unique_words": len(counts),
        "average_word_length": round(letters / words, 3) if words else 0.0,
        "top": [{"word": w, "count": c, "share": round(c / words, 4)} for w, c in ranked],
    }
    if chart and ranked:
        return Output(stats, content=[Image(_bar_chart([c for _, c in ranked]))])
    return Output(stats)


class ColumnStats(TypedDict, total=False):
    """Attributes:
    name: The column's header.
    kind: "number" when every non-empty value is a number, else "text".
    filled: Rows with a non-empty value.
    empty: Rows with an empty value.
    distinct: Distinct non-empty values.
    min: Smallest value (numbers only).
    max: Largest value (numbers only).
    mean: Mean (numbers only).
    median: Median (numbers only).
    stdev: Sample standard deviation (numbers only, two values or more).
    most_common: The most frequent value and how often it occurs (text only).
    """

    name: str
    kind: Literal["number", "text"]
    filled: int
    empty: int
    distinct: int
    min: float
    max: float
    mean: float
    median: float
    stdev: float
    most_common: Dict[str, int]


class TableStats(TypedDict):
    """Column statistics of a CSV table.

    Attributes:
        delimiter: The delimiter the table was read with.
        rows: Data rows (the header not counted).
        columns: One entry per column, in order.
    """

    delimiter: str
    rows: int
    columns: List[ColumnStats]


class DelimiterQuestion(TypedDict):
    """Attributes:
    delimiter: The character between the fields of a row.
    """

    delimiter: Literal[",", ";", "tab", "|"]


@tool(annotations=Annotations(title="CSV column statistics", read_only=True, idempotent=True, open_world=False))
def py_textstats_csv(table: str, delimiter: Optional[Literal[",", ";", "tab", "|"]] = None) -> TableStats:
    """Summarise each column of a CSV table with a header row: numbers get min, max, mean, median and standard deviation; text gets its distinct and most common values. Reports progress on long tables.

    Args:
        table: The CSV text; its first row names the columns.
        delimiter: The field delimiter. Left out, it is detected; when that fails, the user is asked.
    """
    if not table.strip():
        raise InvalidInput("table is empty; pass CSV text whose first row names the columns")
    sep = _delimiter(table, delimiter)
    reader = csv.reader(io.StringIO(table), delimiter=sep)
    try:
        rows = [row for row in reader if row]
    except csv.Error as e:
        raise InvalidInput(f"table is not valid CSV: {e}") from None
    header, body = rows[0], rows[1:]
    values: List[List[str]] = [[] for _ in header]
    total = len(body)
    for start in range(0, max(total, 1), _STEP):
        for row in body[start : start + _STEP]:
            for i in range(len(header)):
                values[i].append(row[i].strip() if i < len(row) else "")
        done = min(start + _STEP, total)
        progress.report(done, total, f"read {done} of {total} rows")
    columns = [_column(name.strip() or f"column {i + 1}", values[i]) for i, name in enumerate(header)]
    return {"delimiter": "tab" if sep == "\t" else sep, "rows": total, "columns": columns}


def _delimiter(table: str, given: Optional[str]) -> str:
    if given is not None:
        return "\t" if given == "tab" else given
    sample = "\n".join(table.splitlines()[:20])
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        pass
    try:
        answer = user.ask("Which character separates the fields of this table?", DelimiterQuestion)
    except user.AskError as e:
        raise InvalidInput(
            f"cannot tell this table's delimiter and could not ask the user ({e.detail}); "
            'pass `delimiter` (",", ";", "tab" or "|")'
        ) from None
    if not answer.accepted:
        raise InvalidInput('the user did not say which delimiter the table uses; pass `delimiter` (",", ";", "tab" or "|")')
    chosen = answer.content.get("delimiter")
    if chosen not in (",", ";", "tab", "|"):
        raise InvalidInput(f"the user's answer {chosen!r} is not a delimiter this tool knows")
    return "\t" if chosen == "tab" else chosen


def _number(text: str) -> Optional[float]:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _column(name: str, cells: List[str]) -> ColumnStats:
    filled = [c for c in cells if c != ""]
    stats: ColumnStats = {
        "name": name,
        "kind": "text",
        "filled": len(filled),
        "empty": len(cells) - len(filled),
        "distinct": len(set(filled)),
    }
    numbers = [_number(c) for c in filled]
    if filled and all(n is not None for n in numbers):
        xs = sorted(n for n in numbers if n is not None)
        mean = sum(xs) / len(xs)
        mid = len(xs) // 2
        stats.update(
            kind="number",
            min=xs[0],
            max=xs[-1],
            mean=round(mean, 6),
            median=xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2,
        )
        if len(xs) > 1:
            stats["stdev"] = round(math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)), 6)
    elif filled:
        # max(), not Counter.most_common: that imports heapq at call time,
        # and a component only has the modules imported at build time.
        value, count = max(Counter(filled).items(), key=lambda kv: kv[1])
        stats["most_common"] = {value[:200]: count}
    return stats


def _bar_chart(counts: List[int], width: int = 320, bar: int = 14, gap: int = 4) -> bytes:
    """A PNG of one horizontal bar per count, scaled to the largest, top to bottom."""
    height = gap + len(counts) * (bar + gap)
    largest = max(counts)
    background, ink = b"\xff\xff\xff", b"\x33\x66\xcc"
    rows = []
    for y in range(height):
        slot, offset = divmod(y - gap, bar + gap)
        length = 0
        if y >= gap and offset < bar and slot < len(counts):
            length = max(1, round((width - 2 * gap) * counts[slot] / largest))
        line = background * gap + ink * length + background * (width - gap - length)
        rows.append(b"\x00" + line)  # filter type 0 for every row
    raw = b"".join(rows)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
