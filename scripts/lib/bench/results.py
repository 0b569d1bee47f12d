"""The rows of the table: their definitions, every run's values, medians and ratios.

A metric's KIND is rate (higher is better) or time (seconds), compared as a
ratio mount/direct (direct/mount for times) with TARGET the minimum ratio from
the issue, or None; or, for figures without a baseline (only the "mount" side
is recorded): max (TARGET is the value to stay under), atmost (TARGET is the
most it may be, that value included), abs (no target) or text (ok when "clean"). A max or abs row may also record a "direct" side, printed
beside it as a baseline without a ratio (the latency rows: evicting beside idle).
A value is a number, FAIL, or a text (the verify rows).
"""
import statistics
from dataclasses import dataclass, field

from .core import FAIL, log


@dataclass
class Metric:
    key: str
    label: str
    unit: str
    kind: str
    target: str = None   # as printed ("0.25"), or None
    section: str = ""
    columns: tuple = None   # what its two sides are, when not its section's columns
    mount: list = field(default_factory=list)
    direct: list = field(default_factory=list)


@dataclass
class Section:
    title: str
    col1: str
    col2: str


class Results:
    def __init__(self, first_section):
        self.items = []        # Metric and Section, in table order
        self.metrics = {}
        self.section = first_section
        self.failed = False

    def define(self, key, label, unit, kind, target=None, columns=None):
        m = Metric(key, label, unit, kind, target, self.section, columns)
        self.items.append(m)
        self.metrics[key] = m
        return m

    def define_section(self, title, col1, col2):
        """A header row in the table before the next metrics."""
        self.items.append(Section(title, col1, col2))
        self.section = title

    def label(self, key):
        return self.metrics[key].label

    def record(self, key, side, value):
        getattr(self.metrics[key], side).append(value)
        if value == FAIL:
            self.failed = True

    def last(self, key, side):
        values = getattr(self.metrics[key], side)
        return values[-1] if values else None

    def progress(self, key):
        """Logs the values just recorded for KEY."""
        m = self.metrics[key]
        mv, dv = self.last(key, "mount"), self.last(key, "direct")
        log(f"    {m.label:<34} mount {fmt_value(m.unit, mv)}, direct {fmt_value(m.unit, dv)}, "
            f"ratio {ratio(m.kind, mv, dv)}")


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def median(values):
    """FAIL if any run failed; the last one if they are not numbers (the verify
    results); None if there are none."""
    if not values:
        return None
    if any(v == FAIL for v in values):
        return FAIL
    if not is_number(values[-1]):
        return values[-1]
    return statistics.median(values)


def ratio(kind, mount, direct):
    """Higher is better: mount/direct for rates, direct/mount for times; "-" when
    either side failed or is missing."""
    if not is_number(mount) or not is_number(direct):
        return "-"
    if kind == "time":
        r = direct / mount if mount > 0 else 0
    else:
        r = mount / direct if direct > 0 else 0
    return f"{r:.2f}"


def fmt_value(unit, value):
    if value is None:
        return "n/a"
    if not is_number(value):
        return str(value)
    if unit == "s":
        return f"{value:.3f} s"
    if unit == "ms" and value < 1:
        return f"{value:.3f} ms"
    if unit in ("MiB", "µs", "ms"):
        return f"{value:.1f} {unit}"
    if unit == "text":
        return str(value)
    if unit == "requests":
        return f"{value:.2f}"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "B/file":
        return f"{value:.1f} B"
    return f"{value:.0f} {unit}"


def row(m):
    """The table's view of one metric: medians, ratio, target and status."""
    mm = median(m.mount)
    if mm is None:
        md = None
    elif m.kind in ("rate", "time") or m.direct:
        md = median(m.direct)    # an abs or max row with a direct side: its baseline, no ratio
    else:
        md = "-"
    r = ratio(m.kind, mm, md) if m.kind in ("rate", "time") else "-"
    t = m.target
    if mm == FAIL or md == FAIL:
        status = "FAIL"
    elif m.kind == "text":
        # A text row is ok when it reads its target ("clean" unless it names another).
        status = "ok" if mm == (t or "clean") else ("-" if mm is None else "FAIL")
    elif m.kind == "max" and t is not None and mm is not None:
        status = "ok" if mm < float(t) else "above"
    elif m.kind == "atmost" and t is not None and is_number(mm):
        status = "ok" if mm <= float(t) else "above"
    elif t is None or r == "-":
        status = "-"
    elif float(r) >= float(t):
        status = "ok"
    else:
        status = "below"
    if t is None:
        target = "-"
    elif m.kind == "text":
        target = t
    elif m.kind == "max":
        target = f"< {t} {m.unit}"
    elif m.kind == "atmost":
        target = f"<= {t} {m.unit}"
    else:
        target = f">= {t}x"
    return {"mount": mm, "direct": md, "ratio": r, "target": target, "status": status}
