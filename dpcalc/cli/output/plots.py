"""Figures for the CLI (--plot). One function per figure.

matplotlib is an optional extra (`pip install 'dpcalc-privacy[plot]'`): it is imported only
inside the drawing functions, and a missing install is one clear error line.
"""
from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from dpcalc.errors import DpcalcError

PLOT_SUFFIXES = (".png", ".svg")
_MISSING = "--plot needs matplotlib: pip install 'dpcalc-privacy[plot]'"
# Use a log axis once the values span more than this factor.
_LOG_SPAN = 20.0


@dataclass
class Curve:
    """One accountant's ε over the sweep; ``lower`` (certified lower bounds) shades a band."""

    label: str
    values: Sequence[float | None]
    lower: Sequence[float | None] | None = None
    certified: bool = True


def check_plot_path(path: str) -> Path:
    """The --plot FILE as a Path, if its suffix is one we can write."""
    target = Path(path)
    if target.suffix.lower() not in PLOT_SUFFIXES:
        raise DpcalcError(f"--plot FILE must end in .png or .svg; got {path!r}")
    try:
        if not target.parent.is_dir():
            raise DpcalcError(f"--plot FILE's folder does not exist: {str(target.parent)!r}")
        if target.is_dir():
            raise DpcalcError(f"--plot FILE is a folder: {path!r}")
        writable = os.access(target.parent, os.W_OK) and (not target.exists()
                                                         or os.access(target, os.W_OK))
    except OSError as error:  # e.g. a name longer than the file system allows
        raise DpcalcError(f"--plot FILE cannot be used: {error.strerror or error}") from None
    if not writable:
        raise DpcalcError(f"--plot FILE cannot be written: {path!r}")
    _try_writing(target, path)
    return target


def _try_writing(target: Path, path) -> None:
    """Open FILE for writing now, before any computing: os.access says yes to root (and on
    /proc) where the write itself fails. An existing file is opened for appending, so left
    as it is; a new one is removed again."""
    existed = target.exists()
    try:
        with open(target, "ab"):
            pass
    except OSError as error:
        raise DpcalcError(f"--plot FILE cannot be written: {str(path)!r} "
                          f"({error.strerror or error})") from None
    finally:
        if not existed:
            try:
                target.unlink()
            except OSError:
                pass


def _finite(values) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v) and v > 0]


def _as_plot_values(values) -> list[float]:
    """None (not applicable) and inf (no finite ε) become gaps in the line."""
    return [math.nan if v is None or not math.isfinite(v) else float(v) for v in values]


def _spans(values: list[float]) -> bool:
    return bool(values) and min(values) > 0 and max(values) / min(values) > _LOG_SPAN


def _import_figure():
    # dpcalc only writes files, through Figure (no pyplot, no window): no interactive backend
    # is needed, and an invalid MPLBACKEND in the environment (matplotlib validates it on
    # import: MPLBACKEND=bogus was a traceback) must not stop a .png from being written.
    if "matplotlib" not in sys.modules:
        os.environ["MPLBACKEND"] = "agg"
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise DpcalcError(_MISSING) from None
    return Figure


# Drawing order (matplotlib zorder): shaded bands below every line, approximations and
# reference lines above them, certified curves on top, so no certified curve is hidden.
_BAND, _REFERENCE, _CERTIFIED, _MARKS = 1.0, 2.0, 3.0, 4.0


def _log_ticks(axes, which: str) -> None:
    """At least 4 labelled ticks on a base-10 log axis, whatever its span (matplotlib's
    default labels one tick on an axis spanning less than a decade, two on 0.2…1). Ticks at
    1, s₂, … per decade leave at most a gap g (in decades) between neighbours, so an axis of
    d ≥ 4g decades holds 4 of them: decades alone (g = 1) from 4 decades, 1 and 3 (g = 0.52)
    from 2.1, 1, 2 and 5 (g = 0.40) from 1.6, every digit (g = 0.30) from 1.21; below that,
    evenly spaced round numbers (MaxNLocator)."""
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    low, high = axes.get_xlim() if which == "x" else axes.get_ylim()
    low, high = min(low, high), max(low, high)
    if low <= 0 or not math.isfinite(high / low):
        return
    decades = math.log10(high / low)
    axis = axes.xaxis if which == "x" else axes.yaxis
    if decades >= 1.21:
        subs = ((1.0,) if decades >= 4 else (1.0, 3.0) if decades >= 2.1
                else (1.0, 2.0, 5.0) if decades >= 1.6 else tuple(map(float, range(1, 10))))
        axis.set_major_locator(LogLocator(base=10.0, subs=subs, numticks=40))
    else:
        axis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())
    if which == "x":
        axes.set_xlim(low, high)
    else:
        axes.set_ylim(low, high)


def epsilon_sweep_figure(path: str, x_label: str, x_values: Sequence[float], curves: list[Curve],
                         title: str, y_label: str = "ε", x_scale: str = "linear") -> Path:
    """ε over a sweep (steps, epochs, σ or q) per accountant, with the certified band
    between lower and upper bound shaded where a curve has ``lower``. The x axis is
    ``x_scale`` (linear or log); the y axis is log-scaled when ε spans more than a factor
    20. Returns the written path."""
    target = check_plot_path(path)
    Figure = _import_figure()
    figure = Figure(figsize=(7.5, 4.8), layout="constrained")
    axes = figure.add_subplot()
    order = sorted(range(len(x_values)), key=lambda index: x_values[index])
    xs = [float(x_values[index]) for index in order]
    for curve in curves:
        ys = _as_plot_values([curve.values[index] for index in order])
        style = "-" if curve.certified else "--"
        label = curve.label if curve.certified else f"{curve.label} (approximation)"
        (line,) = axes.plot(xs, ys, style, marker="o", markersize=3, linewidth=1.5, label=label,
                            zorder=_CERTIFIED if curve.certified else _REFERENCE)
        if curve.lower is not None:
            lows = _as_plot_values([curve.lower[index] for index in order])
            axes.fill_between(xs, lows, ys, color=line.get_color(), alpha=0.25, linewidth=0,
                              label=f"{curve.label}: certified band (lower to upper bound)",
                              zorder=_BAND)
    if x_scale == "log" and _finite(xs):
        axes.set_xscale("log")
        _log_ticks(axes, "x")
    every_value = [value for curve in curves for value in _finite(curve.values)]
    log_y = _spans(every_value)
    if log_y:
        axes.set_yscale("log")
        _log_ticks(axes, "y")
    axes.set_xlabel(x_label)
    axes.set_ylabel(f"{y_label} (log scale)" if log_y else y_label)
    axes.set_title(title)
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(fontsize="small", loc="best")
    return _save_group_figure(figure, target, path)


# --- dpcalc group: the three figures of seed 000 ----------------------------------------
_GROUP_STYLES = {"pb": "-", "rdp-overapprox": "--", "group-conversion": ":"}


@dataclass
class GroupSeries:
    """One line of a group-privacy figure: ``method``'s ε for group size ``k`` (or, over k,
    one σ named by ``label``). None / inf values are gaps."""

    method: str
    k: int | None
    values: Sequence[float | None]
    label: str | None = None


def _save_group_figure(figure, target: Path, path) -> Path:
    try:
        figure.savefig(target, dpi=150)
    except OSError as error:
        raise DpcalcError(f"--plot could not write {str(path)!r}: {error.strerror or error}") from None
    return target


def _group_axes(x_values, series: list[GroupSeries], x_label: str, title: str, log_x: bool):
    Figure = _import_figure()
    figure = Figure(figsize=(7.5, 4.8), layout="constrained")
    axes = figure.add_subplot()
    colours = {}
    for line in series:
        key = line.k if line.k is not None else line.label
        colour = colours.setdefault(key, f"C{len(colours) % 10}")
        label = line.label or f"k={line.k}, {line.method}"
        if line.label and line.k is not None:
            label = f"{line.label}, {line.method}"
        axes.plot([float(x) for x in x_values], _as_plot_values(line.values),
                  _GROUP_STYLES.get(line.method, "-"), color=colour, marker="o", markersize=2.5,
                  linewidth=1.4, label=label,
                  zorder=_CERTIFIED if line.method == "pb" else _REFERENCE)
    if log_x:
        axes.set_xscale("log", base=2)
    every_value = [value for line in series for value in _finite(line.values)]
    log_y = _spans(every_value)
    if log_y:
        axes.set_yscale("log")
        _log_ticks(axes, "y")
    axes.set_xlabel(x_label)
    axes.set_ylabel("ε (log scale)" if log_y else "ε")
    axes.set_title(title, fontsize="medium")
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(fontsize="x-small", loc="best", ncol=2 if len(series) > 8 else 1)
    return figure


def group_compositions_figure(path, steps: Sequence[int], series: list[GroupSeries],
                              title: str) -> Path:
    """ε over the number of compositions (steps) per k and method (seed 000, figure 2):
    pb solid, rdp-overapprox dashed, group-conversion dotted; one colour per k."""
    target = check_plot_path(str(path))
    figure = _group_axes(steps, series, "compositions (steps T)", title, log_x=True)
    return _save_group_figure(figure, target, path)


def group_over_k_figure(path, k_values: Sequence[int], series: list[GroupSeries],
                        title: str) -> Path:
    """ε over the number of protected records k, one line per σ (seed 000, figure 3)."""
    target = check_plot_path(str(path))
    figure = _group_axes(k_values, series, "protected records k", title, log_x=False)
    from matplotlib.ticker import MaxNLocator

    figure.axes[0].xaxis.set_major_locator(MaxNLocator(integer=True))
    return _save_group_figure(figure, target, path)


def group_distributions_figure(path, outputs: Sequence[float], density_a: Sequence[float],
                               density_b: Sequence[float], title: str) -> Path:
    """The worst-case pair's densities A = N(0, σ²) and B = Σ_j p_j N(j, σ²) (seed 000,
    figure 1), on a linear and a log axis (the log axis shows the j ≥ 1 components)."""
    target = check_plot_path(str(path))
    Figure = _import_figure()
    figure = Figure(figsize=(9.0, 4.0), layout="constrained")
    for index, scale in enumerate(("linear", "log")):
        axes = figure.add_subplot(1, 2, index + 1)
        axes.plot(outputs, density_a, "-", linewidth=1.4, label="A = N(0, σ²)")
        axes.plot(outputs, density_b, "--", linewidth=1.4, label="B = Σ_j p_j N(j, σ²)")
        axes.set_yscale(scale)
        if scale == "log":
            floor = max(1e-300, min(float(min(density_a)), float(min(density_b))))
            axes.set_ylim(bottom=floor)
        axes.set_xlabel("output (sensitivity 1)")
        axes.set_ylabel("density" + (" (log scale)" if scale == "log" else ""))
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize="small")
    figure.suptitle(title, fontsize="medium")
    return _save_group_figure(figure, target, path)


# --- dpcalc risk: the trade-off curve ---------------------------------------------------
def tradeoff_figure(path, fprs: Sequence[float], upper: Sequence[float], lower: Sequence[float],
                    marked: Sequence[tuple[float, float]], log_axes: bool, title: str) -> Path:
    """TPR against FPR of the best membership test: the certified upper curve (safe), the
    band down to the certified lower curve, the random-guess diagonal TPR = FPR, and the
    asked FPRs marked. Log-scaled axes with ``log_axes``."""
    target = check_plot_path(str(path))
    figure = tradeoff_axes(fprs, upper, lower, marked, log_axes, title)
    try:
        figure.savefig(target, dpi=150)
    except OSError as error:
        raise DpcalcError(f"--plot could not write {str(path)!r}: {error.strerror or error}") from None
    return target


def tradeoff_axes(fprs: Sequence[float], upper: Sequence[float], lower: Sequence[float],
                  marked: Sequence[tuple[float, float]], log_axes: bool, title: str):
    """The figure of :func:`tradeoff_figure`, not yet written. The certified upper curve is
    drawn on top of the band and the diagonal (which it meets where the run leaks little)."""
    Figure = _import_figure()
    figure = Figure(figsize=(6.0, 5.0), layout="constrained")
    axes = figure.add_subplot()
    xs = [float(x) for x in fprs]
    (line,) = axes.plot(xs, [float(y) for y in upper], "-", linewidth=1.6,
                        label="certified upper bound on TPR (safe)", zorder=_CERTIFIED)
    axes.fill_between(xs, [float(y) for y in lower], [float(y) for y in upper],
                      color=line.get_color(), alpha=0.3, linewidth=0,
                      label="certified band (lower to upper bound)", zorder=_BAND)
    axes.plot(xs, xs, ":", color="grey", linewidth=1.2, label="random guess (TPR = FPR)",
              zorder=_REFERENCE)
    if marked:
        axes.plot([x for x, _ in marked], [y for _, y in marked], "o", color=line.get_color(),
                  markersize=4, label="asked FPRs", zorder=_MARKS)
    if log_axes:
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlim(min(xs), max(xs))
        axes.set_ylim(bottom=max(min(xs), 1e-12) / 2, top=1.05)
        _log_ticks(axes, "x")
        _log_ticks(axes, "y")
    else:
        axes.set_xlim(0.0, 1.0)
        axes.set_ylim(0.0, 1.0)
    axes.set_xlabel("false-positive rate (FPR)" + (" (log scale)" if log_axes else ""))
    axes.set_ylabel("true-positive rate (TPR)" + (" (log scale)" if log_axes else ""))
    axes.set_title(title, fontsize="medium")
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(fontsize="small", loc="lower right")
    return figure
