"""The figures (matplotlib, Agg): the risk plot's title names the run (σ, q, T, ε), log axes
carry at least 4 labelled ticks whatever their span, and certified curves are drawn on top."""
from __future__ import annotations

import math
import re

import pytest

pytest.importorskip("matplotlib")

from dpcalc.cli.app import main  # noqa: E402
from dpcalc.cli.output import plots  # noqa: E402


def _labelled(axes, which: str) -> list[str]:
    """The tick labels shown inside the view limits after a draw (Agg)."""
    axes.figure.canvas.draw() if axes.figure.canvas is not None else None
    axis = axes.xaxis if which == "x" else axes.yaxis
    low, high = sorted(axes.get_xlim() if which == "x" else axes.get_ylim())
    return [tick.label1.get_text() for tick in axis.get_major_ticks()
            if tick.label1.get_text() and low * (1 - 1e-9) <= tick.get_loc() <= high * (1 + 1e-9)]


def _agg(figure):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    figure.canvas.draw()
    return figure.axes[0]


@pytest.mark.parametrize("smallest_fpr, upper_floor", [
    (1e-4, 0.0),     # 4 decades of FPR; TPR over 4 decades too
    (1e-2, 0.3),     # 2 decades of FPR; TPR from 0.3 (under one decade: 1 label by default)
    (0.2, 0.5),      # under one decade on both axes
])
def test_log_axes_label_at_least_four_ticks(smallest_fpr, upper_floor):
    import numpy as np

    fprs = np.geomspace(smallest_fpr, 0.999, 60)
    upper = np.maximum(np.minimum(1.0, 3 * fprs), upper_floor)
    lower = np.maximum(fprs, 0.9 * upper)
    axes = _agg(plots.tradeoff_axes(fprs, upper, lower, [(fprs[0], upper[0])], True, "t"))
    for which in "xy":
        shown = _labelled(axes, which)
        assert len(shown) >= 4, (which, shown)
        assert all(math.isfinite(float(text)) for text in shown)  # plain numbers, read as such


def test_the_certified_curve_is_drawn_on_top():
    import numpy as np

    fprs = np.geomspace(1e-3, 0.999, 30)
    figure = plots.tradeoff_axes(fprs, fprs, fprs, [], False, "t")  # curve on the diagonal
    axes = figure.axes[0]
    lines = {line.get_label(): line.get_zorder() for line in axes.get_lines()}
    band = max(collection.get_zorder() for collection in axes.collections)
    certified = lines["certified upper bound on TPR (safe)"]
    assert certified > lines["random guess (TPR = FPR)"] and certified > band


def test_sweep_certified_curves_above_approximations_and_bands(tmp_path, monkeypatch):
    saved = []
    monkeypatch.setattr(plots, "_save_group_figure",
                        lambda figure, target, path: saved.append(figure) or target)
    curves = [plots.Curve("gdp", [1.0, 2.0, 4.0], certified=False),
              plots.Curve("pb", [1.0, 2.1, 4.2], certified=True, lower=[0.9, 2.0, 4.1])]
    plots.epsilon_sweep_figure(str(tmp_path / "s.png"), "steps", [10, 100, 1000], curves, "t",
                               x_scale="log")
    axes = _agg(saved[0])
    lines = {line.get_label(): line.get_zorder() for line in axes.get_lines()}
    assert lines["pb"] > lines["gdp (approximation)"]
    assert lines["pb"] > max(collection.get_zorder() for collection in axes.collections)
    assert len(_labelled(axes, "x")) >= 3  # 10, 100, 1000 (3 decades: 1 and 3 per decade)


def test_risk_plot_title_names_the_run(tmp_path, monkeypatch, capsys):
    """Through the CLI: the title carries σ, q, T and the certified ε at δ = 1e-5, whose
    figure is what `dpcalc epsilon` prints for the same run."""
    titles = []
    original = plots.tradeoff_figure

    def spy(path, fprs, upper, lower, marked, log_axes, title):
        titles.append(title)
        return original(path, fprs, upper, lower, marked, log_axes, title)

    monkeypatch.setattr(plots, "tradeoff_figure", spy)
    run = ["--q", "0.01", "--sigma", "1.1", "--steps", "200"]
    target = tmp_path / "risk.png"
    with pytest.raises(SystemExit) as stop:
        main(["risk", *run, "--plot", str(target), "--log-axes"])
        raise SystemExit(0)
    assert (stop.value.code or 0) == 0 and target.stat().st_size > 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["epsilon", *run, "-f", "plain"])
        raise SystemExit(0)
    epsilon = capsys.readouterr().out.strip()  # 6 digits rounded up; the title shows 5
    (title,) = titles
    first = title.splitlines()[0]
    assert "σ = 1.1" in first and "q = 0.01" in first and "T = 200" in first
    shown = re.search(r"ε ≤ (\S+) at δ = 1e-05", first).group(1)
    assert float(epsilon) <= float(shown) <= float(epsilon) * (1 + 1e-4)
    assert "Poisson sampling" in title
